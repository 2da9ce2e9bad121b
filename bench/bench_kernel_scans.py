"""Benchmark of two scans of the conservative kernel, each against its former branchy form.

``shortest_behind`` (the early stop's shortest and longest estimates behind each queue position)
and ``_dominated`` (the memo of shapes with no fit before an instant) were written with a branch
per job or entry on whether it counts; on queues in random width order and random memo lookups
those branches are mispredicted about half the time. The kernels now have none (a table load, all
entries read); the former forms are compiled here as the baselines, run on the same inputs in the
same process, and checked equal before anything is timed. Nothing here is a test: the figures go
to BENCHMARKS.md.

    PYTHONPATH=src python bench/bench_kernel_scans.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from metasched._jit import njit
from metasched.policy.local._conservative_kernel import MEMO, MEMO_SIZE, _dominated, _note, shortest_behind


@njit(cache=True)
def _shortest_behind_branchy(queue, procs, durations, free_now, out, longest):  # type: ignore[no-untyped-def]
    """``shortest_behind`` as it was to the eighteenth session (a branch on each job's width)."""
    best = np.inf
    most = -np.inf
    for x in range(queue.shape[0] - 1, -1, -1):
        q = queue[x]
        p = procs[q]
        if p == 0:
            best = -np.inf
        elif p <= free_now:
            d = durations[q]
            if d < best:
                best = d
            if d > most:
                most = d
        out[x] = best
        longest[x] = most
    out[queue.shape[0]] = np.inf
    longest[queue.shape[0]] = -np.inf


@njit(cache=True)
def _dominated_early_return(memo, p, duration, limit):  # type: ignore[no-untyped-def]
    """``_dominated`` as it was to the eighteenth session (returns at the first entry that holds)."""
    m = int(memo[0])
    if m > MEMO:
        m = MEMO
    for e in range(m):
        k = 1 + 3 * e
        if memo[k + 2] >= limit and memo[k] <= p and memo[k + 1] <= duration:
            return True
    return False


@njit(cache=True)
def _lookups(memo, ps, ds, ls, early):  # type: ignore[no-untyped-def]
    hits = 0
    for i in range(ps.shape[0]):
        if early:
            hits += _dominated_early_return(memo, ps[i], ds[i], ls[i])
        else:
            hits += _dominated(memo, ps[i], ds[i], ls[i])
    return hits


def _best(run: Callable[[], object], reps: int = 7) -> float:
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best


def _scan_each(scan: Callable[..., None], queues: list[np.ndarray], *args: object) -> Callable[[], None]:
    """Every queue scanned once, called from Python as the kernels' callers do between other work
    (a compiled loop over a few queues lets the branch predictor learn them)."""

    def run() -> None:
        for queue in queues:
            scan(queue, *args)

    return run


def main() -> None:
    rng = np.random.default_rng(1)
    n_jobs = 5000
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64, 128], size=n_jobs).astype(np.int64)
    durations = rng.exponential(5000.0, size=n_jobs)
    print("shortest_behind: 512 queues of random jobs (widths 1-128), ns per queue entry, best of 7")
    print(f"{'queue':>6} {'free':>5} {'branchy':>8} {'now':>6} {'ratio':>6}")
    for length, free_now in ((1500, 16), (1500, 100), (500, 8)):
        queues = [rng.permutation(n_jobs)[:length].astype(np.int64) for _ in range(512)]
        out_a, lo_a = np.empty(length + 1), np.empty(length + 1)
        out_b, lo_b = np.empty(length + 1), np.empty(length + 1)
        for q in queues[:8]:
            _shortest_behind_branchy(q, procs, durations, free_now, out_a, lo_a)
            shortest_behind(q, procs, durations, free_now, out_b, lo_b)
            assert np.array_equal(out_a, out_b) and np.array_equal(lo_a, lo_b)
        per = len(queues) * length / 1e9
        old = _best(_scan_each(_shortest_behind_branchy, queues, procs, durations, free_now, out_a, lo_a))
        new = _best(_scan_each(shortest_behind, queues, procs, durations, free_now, out_b, lo_b))
        print(f"{length:>6} {free_now:>5} {old / per:>8.2f} {new / per:>6.2f} {old / new:>5.2f}x")
    print("_dominated: 1,000,000 lookups of random shapes in a full memo, ns per lookup, best of 7")
    memo = np.zeros(MEMO_SIZE)
    for _ in range(MEMO):
        _note(memo, int(rng.choice([1, 2, 4, 8, 16, 32, 64])), rng.exponential(5000.0), rng.uniform(0.0, 1e5))
    count = 1_000_000
    ps = rng.choice([1, 2, 4, 8, 16, 32, 64, 128], size=count).astype(np.int64)
    ds = rng.exponential(5000.0, count)
    ls = rng.uniform(0.0, 1e5, count)
    hits = _lookups(memo, ps, ds, ls, True)
    assert hits == _lookups(memo, ps, ds, ls, False)
    old = _best(lambda: _lookups(memo, ps, ds, ls, True))
    new = _best(lambda: _lookups(memo, ps, ds, ls, False))
    print(
        f"hits {hits / count:.2f}: early return {old / count * 1e9:.2f}, all read {new / count * 1e9:.2f}, "
        f"{old / new:.2f}x"
    )


if __name__ == "__main__":
    main()
