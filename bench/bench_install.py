"""Install sizes (issue 34): the base install and each extra, each into a fresh venv.

Run: ``python bench/bench_install.py [--extras ,sim,server,postgres,lp,all]`` from the repository root.
Prints one markdown row per install: packages, MB of site-packages (venv's own pip/setuptools excluded),
seconds of ``pip install`` (from pip's local cache when warm: the figure is the install, not the download),
and whether numba, llvmlite, scipy, matplotlib, fastapi or uvicorn came in.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("numba", "llvmlite", "scipy", "matplotlib", "fastapi", "uvicorn")
ROOT = Path(__file__).resolve().parent.parent


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extras", default=",sim,server,postgres,lp,all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheel"
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], check=True
        )
        wheel = next(wheels.glob("metasched-*.whl"))
        print("| install | packages | MB | s | heavy packages |")
        print("| --- | --- | --- | --- | --- |")
        for extra in args.extras.split(","):
            venv = Path(tmp) / f"venv-{extra or 'base'}"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            site = next(venv.glob("lib/python*/site-packages"))
            before = dir_mb(site)
            pkgs_before = {p.name for p in site.glob("*.dist-info")}
            spec = f"metasched[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
            t0 = time.perf_counter()
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec], check=True)
            seconds = time.perf_counter() - t0
            new = sorted({p.name for p in site.glob("*.dist-info")} - pkgs_before)
            names = [n.split("-")[0].lower() for n in new]
            heavy = [h for h in HEAVY if h in names]
            label = f"`pip install 'metasched[{extra}]'`" if extra else "`pip install metasched`"
            size = dir_mb(site) - before
            print(f"| {label} | {len(new)} | {size:.0f} | {seconds:.0f} | {', '.join(heavy) or 'none'} |", flush=True)
            if not extra:
                print("base packages: " + " ".join(names), file=sys.stderr)


if __name__ == "__main__":
    main()
