from metasched.cli.main import main

main()
