"""The peers' harness: how the benchmarks run the peer simulators (``../shared/peers``: the 100-line
pure-Python reference simulator ``ref_sim.py`` and pyss under Python 2.7) beside metasched, on the
same jobs, so that anyone can re-run the comparisons of BENCHMARKS.md."""
