#!/usr/bin/env bash
# OpenMPI (Debian's openmpi-bin, libopenmpi-dev: mpirun, mpicc) for the parallel-job tests (issue 36):
# a tiny MPI program of 2 ranks runs through placeholders on the Slurm and Grid Engine testbeds.
# Nothing to start: "start" checks that mpicc and mpirun work (as root, hence the OMPI_ALLOW_* variables).
# Verbs: install start stop status env. Root only.
set -euo pipefail
TB_NAME=mpi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

do_check() {
  local d; d=$(mktemp -d)
  printf '#include <mpi.h>\n#include <stdio.h>\nint main(int c,char**v){int r,n;MPI_Init(&c,&v);MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);printf("rank %%d of %%d\\n",r,n);MPI_Finalize();return 0;}\n' > "$d/hello.c"
  mpicc -o "$d/hello" "$d/hello.c"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe -np 2 "$d/hello" | grep -c '^rank ' | grep -qx 2
  rm -rf "$d"
}

case "${1:-start}" in
  install) command -v mpicc >/dev/null && command -v mpirun >/dev/null || apt_install openmpi-bin libopenmpi-dev ;;
  start) do_check && log "mpirun runs 2 ranks" ;;
  stop) ;;
  status) command -v mpirun && mpirun --version | head -n 1 ;;
  env) echo "export METASCHED_TESTBED_MPI=$(command -v mpirun)" ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
