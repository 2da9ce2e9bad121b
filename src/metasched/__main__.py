from metasched.cli.launch import main

if __name__ == "__main__":  # not when a worker process re-imports the main module (spawn, forkserver)
    main()
