"""Compiled inner loop of conservative backfilling: a pass over a queue, resumable.

The same algorithm as ``ConservativeBackfill._full_pass`` built on
:class:`~metasched.model.profile.Profile`, on flat arrays, compiled with numba (LLVM). The float
operations are the same, in the same order (``start + duration``, comparisons), so the plans are
bit-identical to the Python pass; ``tests/policy/local/test_conservative_kernel.py`` checks it
differentially.

Why compiled: a pass places every queued job in a profile that grows with the queue (two
breakpoints per job), so its cost is (queue length) x (steps walked per job), and at the loads
of seed 000's sweep a site holds thousands of copies.

Why resumable (:class:`PassState` + :func:`place`): a pass's starts are known as soon as no job
left in the queue can start now, which on a crowded site is long before its end; the
reservations of the jobs behind are placed only if someone asks for them. Stopping rule (exact):
before placing the job at position ``x``, let ``md`` be the shortest estimate among the jobs from
``x`` on that are no wider than the processors free at the start of the pass. If some step
before ``now + md`` has no processor free, or no processor is really free any more, no job from
``x`` on can start now: the profile only loses processors as jobs are placed, and a job starts
now only if it is that narrow and its whole window ``[now, now + estimate)`` has processors free.
(A zero-width job, which fits anywhere, disables the rule.) Stronger, when the caller also gives
``md1``, the shortest estimate among the jobs from ``x`` on one processor wide: no job from ``x`` on
can start now if none of width 1 can (a step before ``now + md1`` has no processor free; with none
of width 1 behind, ``md1`` is ``inf`` and this asks for any such step) and none wider can (fewer
than 2 processors really free, or a step before ``now + md`` has fewer than 2 free: a wider job's
estimate is at least ``md``, so its window would hold that step). Both tests only become true as
``x`` grows (the minima only grow, steps only lose processors), so testing them every few
positions stops at most that much later. (In seed 000's sweep it spares 8% of the positions the
passes look at in cons-slower CTC 2.0, 22% in xfer-k4: BENCHMARKS.md, "Where a simulation's cycles
go, by decision".)

Why deferred (see :func:`place`): at heavy load most of a pass's jobs land far beyond the
instants where anything could still start now; their placement is put off until a job whose
window reaches that far, or a request for a reservation, needs them (exact, same plans).

Invariant (as the Python pass): a job never delays the reservation of any job ahead of it in the
queue, and no step ever has fewer than 0 processors free.
"""

from __future__ import annotations

from typing import cast

import numpy as np

import metasched._jit as _jit
from metasched._jit import drop_stale_cache, move, njit


def i64(value: int) -> int:
    """``value`` as a NumPy int64 (``int`` to mypy), for constants the kernels pass to other
    kernels: numba compiles a callee once per *literal* argument value (and a counter that starts
    from a literal gets a copy for that value too, while its type is being inferred), but types a
    NumPy scalar, even a global one, as plain int64."""
    return cast(int, np.int64(value))


ZERO = i64(0)
ONE = i64(1)
TWO = i64(2)

#: Returned by :func:`place` when a job is wider than the machine.
TOO_WIDE = -1
#: Returned when the profile never returns to enough processors (running jobs claim more than
#: the machine has): no job could ever be placed.
NO_END = -2

#: ``ints[GEN]``: the generation of a pass's shape tables (see :func:`place`): their entries are
#: ``(generation << 32) | width`` keys, and only those of the current generation are there.
GEN = 5

#: How often (in queue positions) :func:`place` tests its stronger stop: the test holds from some
#: position on (see the module's docstring), so testing less often only stops a little later.
STOP_EVERY = 8

#: Entries of a pass's memo of shapes with no fit before an instant (see :func:`_dominated`).
MEMO = 8
#: Length of the memo's array: a count, then (width, estimate, instant) per entry.
MEMO_SIZE = 1 + 3 * MEMO


@njit(cache=True, nogil=True)
def base_profile(
    now: float,
    free_now: int,
    release_ends: np.ndarray,
    release_procs: np.ndarray,
    times: np.ndarray,
    free: np.ndarray,
    t_zero: np.ndarray,
) -> int:
    """``Profile.from_releases`` into ``times``/``free``: ``free_now`` processors free at ``now``
    and ``release_procs[k]`` more at ``release_ends[k]`` (at or before ``now``: at ``now``).
    Returns the number of steps; ``t_zero[0]`` is the first instant with no processor free
    (``inf``: none)."""
    times[0] = now
    free[0] = free_now
    n = ONE  # (not a literal, see i64)
    avail = free_now
    for r in np.argsort(release_ends, kind="mergesort"):
        end = release_ends[r]
        avail += release_procs[r]
        if end <= now:
            free[0] = avail
        elif end == times[n - 1]:
            free[n - 1] = avail
        else:
            times[n] = end
            free[n] = avail
            n += 1
    t_zero[0] = _first_zero(times, free, n)
    return n


@njit(cache=True, nogil=True)
def _dominated(memo: np.ndarray, p: int, duration: float, limit: float) -> bool:
    """Whether a job of ``p`` processors for ``duration`` surely has no fit starting before
    ``limit``: some shape in the memo is no wider and no longer and has no fit before an instant
    at or after ``limit``.

    The memo (``memo[0]``: entries noted; entry ``e`` at ``memo[1 + 3 * (e % MEMO)]``: width,
    estimate, instant) holds the last ``MEMO`` facts "no window of this shape starts in the pass
    before this instant", noted by :func:`_note` when a job is put off. Exact: a window of ``p``
    processors for ``duration`` that fits from some instant contains one of a narrower, shorter
    shape that fits from the same instant; the profile only loses processors within a pass
    (:func:`cut`, which gives some back, and a new pass empty the memo), so a fact noted stays
    true. A job with no fit before ``limit`` is put off exactly as its walk would have put it off.
    """
    m = int(memo[0])
    if m > MEMO:
        m = MEMO
    # (every entry read, no early return: whether an entry holds varies at random from call to
    # call, and its mispredicted branches cost more than reading all of them)
    hit = False
    for e in range(m):
        k = 1 + 3 * e
        hit |= (memo[k + 2] >= limit) & (memo[k] <= p) & (memo[k + 1] <= duration)
    return hit


@njit(cache=True, nogil=True)
def _note(memo: np.ndarray, p: int, duration: float, at: float) -> None:
    """Note in the memo (see :func:`_dominated`) that no window of ``p`` processors for
    ``duration`` starts in the pass before ``at``."""
    m = int(memo[0])
    k = 1 + 3 * (m % MEMO)
    memo[k] = p
    memo[k + 1] = duration
    memo[k + 2] = at
    memo[0] = m + 1


@njit(cache=True, nogil=True)
def _first_zero(times: np.ndarray, free: np.ndarray, n: int) -> float:
    """The first instant of the profile ``times[:n]``/``free[:n]`` with no processor free
    (``inf``: none)."""
    for k in range(n):
        if free[k] < 1:
            return times[k]
    return np.inf


@njit(cache=True, nogil=True)
def _fewer_before(times: np.ndarray, free: np.ndarray, n: int, t: float, w: int) -> bool:
    """Whether some step of the profile ``times[:n]``/``free[:n]`` starting before ``t`` has fewer
    than ``w`` processors free."""
    for k in range(n):
        if times[k] >= t:
            return False
        if free[k] < w:
            return True
    return False


@njit(cache=True, nogil=True)
def shortest_behind(
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    free_now: int,
    out: np.ndarray,
    longest: np.ndarray,
) -> None:
    """``out[x]``: the shortest estimate among the jobs at positions ``>= x`` no wider than
    ``free_now`` (``inf``: none; ``-inf``: a zero-width job is among them); ``longest[x]``: the
    longest estimate among those of them that need processors (``-inf``: none). When ``out`` has
    room for at least twice ``len(queue) + 1`` entries, its last ``len(queue) + 1`` also get the
    shortest estimate among the jobs at positions ``>= x`` one processor wide (``inf``: none; for
    the stronger stop of :func:`place`): ``out[len(out) - len(queue) - 1 + x]``. (So a caller
    passing views from a cursor ``c`` on, ``out[c:]`` and ``queue[c:]``, gets them where a whole
    queue's would be.)"""
    n = queue.shape[0]
    ones_at = out.shape[0] - (n + 1) if out.shape[0] >= 2 * (n + 1) else 0
    ones = np.inf
    best = np.inf
    most = -np.inf
    # (branch-free: whether a job counts varies at random along a queue, and LLVM turns a select
    # into a branch; a load from a table it cannot see into stays a load)
    pen = np.empty(4, dtype=np.float64)
    pen[0] = np.inf  # too wide: no shortest
    pen[1] = 0.0  # counts
    pen[2] = np.inf  # too wide: no longest
    pen[3] = 0.0
    one = np.uint64(1)
    x = np.uint64(queue.shape[0])
    while x > 0:
        x -= one
        q = queue[x]
        p = procs[q]
        d = durations[q]
        if p == 0:
            best = -np.inf
        k = np.uint64(p <= free_now)
        short = d + pen[k]
        best = short if short < best else best
        long = d - pen[np.uint64(2) + (k & np.uint64(p > 0))]
        most = long if long > most else most
        out[x] = best
        longest[x] = most
        if ones_at > 0:
            one_wide = d + pen[np.uint64(p == 1)]
            ones = one_wide if one_wide < ones else ones
            out[ones_at + x] = ones
    out[n] = np.inf
    longest[n] = -np.inf
    if ones_at > 0:
        out[ones_at + n] = np.inf


@njit(cache=True, nogil=True)
def _insert(times: np.ndarray, free: np.ndarray, n: int, at: int, t: float, f: int) -> None:
    if n > at:
        move(times, at + 1, at, n - at)
        move(free, at + 1, at, n - at)
    times[at] = t
    free[at] = f


@njit(cache=True, nogil=True)
def _bisect(times: np.ndarray, n: int, t: float) -> int:
    """``bisect_right(times[:n], t) - 1``."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if t < times[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1


@njit(cache=True, nogil=True)
def _seek(times: np.ndarray, n: int, t: float, hint: int) -> int:
    """``bisect_right(times[:n], t) - 1`` (as :func:`_bisect`; ``t`` not NaN), searched from the
    step ``hint`` when ``times[hint] <= t``: the answer is then at or after it, and a galloping
    search finds it in about ``2 log2(distance)`` comparisons. Any other ``hint`` (stale, out of
    range) only falls back to :func:`_bisect`, so a hint never changes the answer."""
    if hint < 0 or hint >= n or times[hint] > t:
        return _bisect(times, n, t)
    lo = hint
    step = 1
    hi = lo + 1
    while hi < n and times[hi] <= t:
        lo = hi
        step <<= 1
        hi = lo + step
    if hi > n:
        hi = n
    # times[lo] <= t, and hi == n or times[hi] > t
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _hints_at(values: np.ndarray, keys: int) -> int:
    """Where the step hints of the first ``keys`` entries of ``values`` are kept (right after
    them, see :func:`place`), or 0 when ``values`` has no room for them."""
    return keys if values.shape[0] >= 2 * keys else 0


@njit(cache=True, nogil=True)
def _hint(values: np.ndarray, at: int, key: int, n: int, none: int) -> int:
    """The step hint of entry ``key`` (a float at ``values[at + key]``, see :func:`_hints_at`) as an
    index into a profile of ``n`` steps: -1 when it is none (never written, ``-inf``, NaN, out of
    range: float-to-int conversion is defined only in range); ``none`` when no hints are kept."""
    if at == 0:
        return none
    value = values[at + key]
    if value >= 0.0 and value < n:
        return int(value)
    return -1


@njit(cache=True, nogil=True)
def _keep_hint(values: np.ndarray, at: int, key: int, step: int) -> None:
    """Keep ``step`` as the step hint of entry ``key``, if hints are kept (see :func:`_hints_at`)."""
    if at > 0:
        values[at + key] = step


@njit(cache=True, nogil=True)
def _walk(
    times: np.ndarray, free: np.ndarray, n: int, i: int, after: float, p: int, duration: float, limit: float
) -> tuple[float, int, int]:
    """``Profile.place``'s earliest-fit walk from step ``i`` (the step holding ``after``): the
    earliest ``start >= after`` with ``p`` processors free over ``[start, start + duration)``,
    with the steps ``i`` (holding ``start``) and ``j`` (the first at or after its end). Gives up
    at a start ``>= limit`` (``start`` = ``inf``, ``i`` < ``n``); ``i`` = ``n``: the profile ran out.

    The steps are counted in unsigned integers (``i`` >= 0 here: ``after`` is never before the
    profile's first instant): numba indexes with a signed integer through a wrap-around test for
    negative indices, which in these two loops, the hottest of the pass, cost about as much as the
    comparisons themselves."""
    one = np.uint64(1)
    last = np.uint64(n)
    k = np.uint64(i) if i > 0 else np.uint64(0)
    while True:
        if k >= last:
            return np.inf, n, n
        if free[k] < p:
            k += one
            continue
        t = times[k]
        start = t if t > after else after
        if start >= limit:
            return np.inf, np.int64(k), np.int64(k)  # type: ignore[return-value]
        end = start + duration
        j = k + one
        fits = True
        while j < last and times[j] < end:
            if free[j] < p:
                fits = False
                break
            j += one
        if fits:
            return start, np.int64(k), np.int64(j)  # type: ignore[return-value]
        k = j + one


@njit(cache=True, nogil=True)
def _shape_slot(
    shape_p: np.ndarray, shape_d: np.ndarray, base: int, mask: int, key: int, p: int, duration: float
) -> int:
    """The slot of shape ``(p, duration)`` (``key``: ``p`` and the tables' generation, see
    :func:`place`) in the open-addressing table at ``base`` (``mask + 1`` slots): its entry, or the
    empty slot where it goes (empty: an entry of an older generation, or none ever)."""
    gen = key >> 32
    h = (p * 1000003 + int(duration * 64.0)) & mask
    while (shape_p[base + h] >> 32) == gen and not (shape_p[base + h] == key and shape_d[base + h] == duration):
        h = (h + 1) & mask
    return base + h


@njit(cache=True, nogil=True)
def _put(
    times: np.ndarray, free: np.ndarray, n: int, i: int, j: int, start: float, end: float, p: int, zero: float
) -> tuple[int, float]:
    """Take ``p`` processors over ``[start, end)`` (steps ``i`` to ``j`` of :func:`_walk`), adding
    the breakpoints; the new number of steps and first instant with none free."""
    if (j == n or times[j] != end) and times[i] != start:
        # both breakpoints new: the steps behind the window move back two places at once (as the
        # two insertions below would leave them, each moving them one place)
        f_end = free[j - 1]
        f_start = free[i]
        if n > j:
            move(times, j + 2, j, n - j)
            move(free, j + 2, j, n - j)
        times[j + 1] = end
        free[j + 1] = f_end
        if j - 1 > i:
            move(times, i + 2, i + 1, j - 1 - i)
            move(free, i + 2, i + 1, j - 1 - i)
        times[i + 1] = start
        free[i + 1] = f_start
        n += 2
        i += 1
        j += 1
    else:
        if j == n or times[j] != end:
            _insert(times, free, n, j, end, free[j - 1])
            n += 1
        if times[i] != start:
            _insert(times, free, n, i + 1, start, free[i])
            n += 1
            i += 1
            j += 1
    for k in range(i, j):
        free[k] -= p
        if free[k] < 1 and times[k] < zero:
            zero = times[k]
    return n, zero


@njit(cache=True, nogil=True)
def _resolve(
    times: np.ndarray,
    free: np.ndarray,
    ints: np.ndarray,
    zero: float,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    deferred: np.ndarray,
    bound: np.ndarray,
    until: int,
) -> float:
    """Place, in queue order, the deferred jobs at positions before ``until`` (see
    :func:`place`); returns the new first instant with no processor free (``NO_END`` in
    ``ints[0]`` when the profile ran out)."""
    n = ints[0]
    head = ints[3]
    half = shape_p.shape[0] >> 1
    mask = half - 1
    shape_at = _hints_at(shape_start, shape_p.shape[0])
    gen = ints[GEN] << 32
    while head < ints[4] and deferred[head] < until:
        q = queue[deferred[head]]
        p = procs[q]
        key = gen | p
        duration = durations[q]
        after = bound[head]
        hint = -1
        # the resolution table: starts of deferred jobs placed before, in queue order
        h = _shape_slot(shape_p, shape_d, half, mask, key, p, duration)
        if shape_p[h] == key and shape_start[h] > after:
            after = shape_start[h]
            hint = _hint(shape_start, shape_at, h, n, -1)
        start, i, j = _walk(times, free, n, _seek(times, n, after, hint), after, p, duration, np.inf)
        if i >= n:
            ints[0] = NO_END
            return zero
        if duration > 0 and p != 0:
            n, zero = _put(times, free, n, i, j, start, start + duration, p, zero)
        shape_p[h] = key
        shape_d[h] = duration
        shape_start[h] = start
        _keep_hint(shape_start, shape_at, h, i)
        starts[q] = start
        state[q] = 0
        head += 1
    ints[0] = n
    ints[3] = head
    return zero


@njit(cache=True, nogil=True)
def _advance(
    times: np.ndarray,
    free: np.ndarray,
    ints: np.ndarray,
    zero: float,
    memo: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    deferred: np.ndarray,
    bound: np.ndarray,
    until: int,
    h: float,
) -> tuple[float, float]:
    """Move the horizon of :func:`place` out to ``h`` as far as the deferred jobs before ``until``
    allow (a partial :func:`_resolve`). They are taken in queue order with a running horizon,
    first ``h``: a job whose first fit in the profile as it is ends by the horizon, or by the
    lowest bound of the jobs kept deferred ahead of it, is placed; one with no fit starting
    before the horizon stays deferred, its bound raised to the horizon; any other (its fit
    starts before the horizon and ends after it and after a bound ahead) lowers the horizon to
    that start and stays deferred with it as its bound. Returns the new first instant with none
    free and the final horizon ``h'`` (``NO_END`` in ``ints[0]`` when the profile ran out). A job
    whose shape the pass's ``memo`` shows has no fit before the horizon is kept without a walk (what
    the walk would find, see :func:`_dominated`). Nothing is noted in the memo here: a walk from a
    job's bound tells nothing of the profile before that bound, which after a :func:`cut` may have
    room for that shape (the bound still holds for the job itself).

    Exact: every job still deferred starts, in the pass without deferral, at or after its bound
    (a fit in a profile with at least as many processors free is a lower bound), and every
    bound is at least ``h'``. The profile lacks, for a job read here, only the windows of the
    jobs kept ahead of it (at or after their bounds): the jobs behind it already placed end
    before its bound (they were placed within a horizon at most its bound). So a job whose
    window ends by the horizon or by every bound ahead has the fit it would have in the pass
    without deferral (that window is free there too; nothing fits earlier in a profile with
    fewer free), the profile is exact before ``h'``, and a job placed later in the pass within
    ``[now, h')`` is not blocked by a window still missing. A job behind a deferred one never
    affects it (queue order), and the horizon only comes closer as the list is read, so a bound
    set under an earlier, farther horizon still holds."""
    n = ints[0]
    head = ints[3]
    tail = ints[4]
    w = head
    k = head
    kept = np.inf  # the lowest bound of the jobs kept deferred so far (all ahead of the next one)
    while k < tail and deferred[k] < until:
        x = deferred[k]
        b = bound[k]
        if b < h:
            q = queue[x]
            p = procs[q]
            duration = durations[q]
            if _dominated(memo, p, duration, h):
                start, i, j = np.inf, ZERO, ZERO  # (no fit before the horizon: what the walk finds)
            else:
                start, i, j = _walk(times, free, n, _bisect(times, n, b), b, p, duration, h)
            if i >= n:
                ints[0] = NO_END
                return zero, h
            if start == np.inf:
                b = h
            elif start + duration <= h or start + duration <= kept:
                if duration > 0 and p != 0:
                    n, zero = _put(times, free, n, i, j, start, start + duration, p, zero)
                starts[q] = start
                state[q] = 0
                k += 1
                continue
            else:
                h = start
                b = start
        if b < kept:
            kept = b
        deferred[w] = x
        bound[w] = b
        w += 1
        k += 1
    if w < k:
        while k < tail:
            deferred[w] = deferred[k]
            bound[w] = bound[k]
            w += 1
            k += 1
        ints[4] = w
    ints[0] = n
    return zero, h


@njit(cache=True, nogil=True)
def first_fit(times: np.ndarray, free: np.ndarray, n: int, after: float, p: int, duration: float) -> float:
    """The earliest start at or after ``after`` with ``p`` processors free over
    ``[start, start + duration)`` in the profile ``times[:n]``/``free[:n]`` (``inf``: it runs
    out first)."""
    return _walk(times, free, n, _bisect(times, n, after), after, p, duration, np.inf)[0]


@njit(cache=True, nogil=True)
def reserve(
    times: np.ndarray, free: np.ndarray, ints: np.ndarray, t_zero: np.ndarray, after: float, p: int, duration: float
) -> float:
    """Place one more job (``p`` processors for ``duration``) at its earliest fit at or after
    ``after`` in the profile ``times[:ints[0]]``/``free[:ints[0]]`` (as :func:`place` places a job:
    nothing is taken for a job of no width or length), updating ``ints[0]`` and ``t_zero[0]``;
    its start (``inf``: the profile runs out first; nothing is changed then)."""
    n = ints[0]
    start, i, j = _walk(times, free, n, _bisect(times, n, after), after, p, duration, np.inf)
    if i >= n:
        return np.inf
    if duration > 0 and p != 0:
        ints[0], t_zero[0] = _put(times, free, n, i, j, start, start + duration, p, t_zero[0])
    return start


@njit(cache=True, nogil=True)
def retime(times: np.ndarray, ints: np.ndarray, first_free: np.ndarray, bound: np.ndarray, now: float) -> bool:
    """Make a pass made at ``times[0]`` (see :func:`place`, on demand: no early stop) a pass made
    at the later instant ``now``: its profile starts at ``now`` and every search bound below
    ``now`` is raised to it. ``False`` (nothing changed) when the profile has a breakpoint in
    ``(times[0], now]``.

    Exact when no job of the queue can start in ``[times[0], now]`` (the caller's condition):
    with no breakpoint there the profile is constant over ``[times[0], now]``, so a window that
    fits from an instant of it also fits from ``times[0]``; a placed job's start is not in that
    interval (no breakpoint) nor before it, so it is after ``now`` and is also its first fit at
    or after ``now``; jobs placed from here on get their first fit at or after ``now``, as in a
    pass made at ``now``."""
    n = ints[0]
    if now <= times[0]:
        return True
    if n > 1 and times[1] <= now:
        return False
    times[0] = now
    for p in range(first_free.shape[0]):
        if first_free[p] != -np.inf and first_free[p] < now:
            first_free[p] = now
    for k in range(ints[3], ints[4]):
        if bound[k] < now:
            bound[k] = now
    return True


@njit(cache=True, nogil=True)
def cut(
    times: np.ndarray,
    free: np.ndarray,
    ints: np.ndarray,
    t_zero: np.ndarray,
    first_free: np.ndarray,
    memo: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    deferred: np.ndarray,
    bound: np.ndarray,
    pos: int,
) -> None:
    """Take back a pass (see :func:`place`, on demand: no early stop) to the jobs ahead of queue
    position ``pos``: every job from ``pos`` on that this pass placed (state 0 or 1) gives its
    processors back and is not placed any more (state 3), deferred ones from ``pos`` on leave the
    deferred list, and the pass resumes at ``pos``. Jobs in any other state keep their windows:
    the caller's mark for jobs it started (their windows are those of running jobs; it takes
    them out of the queue).

    Exact: the profile then holds the windows of the placed jobs ahead of ``pos`` and of the
    running jobs only; the placed jobs ahead kept their starts (a job's start never depends on
    jobs behind it, and a deferred job placed after jobs behind it never saw them, see
    :func:`place`), and the deferred ones ahead keep their bounds (a bound is a fit at or after
    the horizon of its time, and the windows taken back ended before it). The search bounds
    that assume the profile only loses processors (``first_free``, both shape tables, the memo)
    are cleared (the shape tables by a new generation, ``ints[GEN]``: they are not written), and
    the deferred list moves to the front of its arrays. Steps with as many processors free as the
    one before are merged into it (a step boundary with the same processors free on both sides
    changes no earliest fit: a fit from the later step fails where one from the earlier fails), so
    the profile never has more steps than a fresh pass's."""
    n = ints[0]
    i = -1  # the step of the last window given back: a hint for the next (starts often ascend)
    for x in range(pos, ints[1]):
        q = queue[x]
        if state[q] != 0 and state[q] != 1:
            continue
        state[q] = 3
        p = procs[q]
        d = durations[q]
        if d > 0 and p != 0:
            # its window given back: ``_put`` with -p, which also puts back the window's bounds
            # should an earlier cut have merged them away
            start = starts[q]
            end = start + d
            i = _seek(times, n, start, i)
            j = i + 1
            while j < n and times[j] < end:
                j += 1
            n, _ = _put(times, free, n, i, j, start, end, -p, np.inf)
    # merge the steps that no longer differ (else every cut would leave breakpoints behind and
    # the profile would outgrow its arrays)
    w = ONE  # (not a literal, see i64)
    for k in range(1, n):
        if free[k] != free[w - 1]:
            times[w] = times[k]
            free[w] = free[k]
            w += 1
    n = w
    ints[0] = n
    tail = ints[4]
    while tail > ints[3] and deferred[tail - 1] >= pos:
        tail -= 1
    # the list moved to the front of its arrays: the jobs from ``pos`` on may be put off again, and
    # the entries already resolved (before ``ints[3]``) would otherwise stay as dead space, which
    # repeated cuts would grow past the arrays (sized for the queue)
    head = ints[3]
    for k in range(head, tail):
        deferred[k - head] = deferred[k]
        bound[k - head] = bound[k]
    ints[3] = 0
    ints[4] = tail - head
    if ints[1] > pos:
        ints[1] = pos
    for p in range(first_free.shape[0]):
        first_free[p] = -np.inf
    ints[GEN] += 1  # (the shape tables emptied: their entries are of an older generation now)
    memo[0] = 0.0
    t_zero[0] = _first_zero(times, free, n)


@njit(cache=True, nogil=True)
def _deferred_bound(ints: np.ndarray, deferred: np.ndarray, bound: np.ndarray, x: int) -> float:
    """The bound of the job at queue position ``x`` in a pass's deferred list (entries ``ints[3]``
    to ``ints[4]``, see :func:`place`); NaN when the list does not hold it (every comparison with
    it is false)."""
    for k in range(ints[3], ints[4]):
        if deferred[k] == x:
            return bound[k]
    return np.nan


@njit(cache=True, nogil=True)
def place(
    capacity: int,
    now: float,
    times: np.ndarray,
    free: np.ndarray,
    ints: np.ndarray,
    t_zero: np.ndarray,
    first_free: np.ndarray,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    memo: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    until: int,
    shortest: np.ndarray,
    longest: np.ndarray,
    deferred: np.ndarray,
    bound: np.ndarray,
    reach: float,
) -> int:
    """Place the jobs at queue positions ``ints[1]`` up to ``until`` (exclusive) in the profile
    ``times[:ints[0]]``/``free[:ints[0]]``; ``ints[2]`` holds the processors really free and
    ``t_zero[0]`` the first instant of the profile with none free (see :func:`base_profile`). The jobs
    are slots ``queue[x]`` of ``procs``/``durations``; each placed slot gets its start in
    ``starts`` and in ``state`` 1 (starts now) or 0 (reserved); a slot not placed yet keeps its
    state. With ``shortest`` and ``longest`` (from :func:`shortest_behind`; empty: never), stops
    early by the module's stopping rule and defers jobs (below); by its stronger rule when
    ``shortest`` has exactly ``2 * (until + 1)`` entries (the one-processor minima in its second
    half, as :func:`shortest_behind` writes them for a queue of ``until`` jobs). Updates ``ints``;
    returns 0, or ``TOO_WIDE``/``NO_END``.

    ``first_free[p]``: the first instant with ``p`` free found so far in this pass (``-inf``:
    none yet); ``shape_*``: two open-addressing tables from (width, estimate) to a start: the
    first half holds a lower bound of the start of the last job of that shape, the second half
    the start of the last deferred job of that shape placed. Within a pass the profile only loses
    processors, so neither can be beaten: searches start from them (as in the Python pass).
    ``shape_p`` holds ``(ints[GEN] << 32) | width``: an entry of another generation is an empty
    slot, so the tables are emptied by moving to the next generation (:func:`cut`, or the caller
    for a new pass) instead of rewriting them (a new pass's clearing was ~4% of the conservative
    multi-site runs); the caller keeps each set of tables' generations increasing and starts them
    above any key already in ``shape_p`` (-1 and 0 are below every generation from 1 on).

    Deferral (exact). While the pass looks for the jobs that start now, the only part of the
    profile that matters is before the horizon ``H``, the earlier of ``now + longest[x]`` and the
    first instant with no processor free: a job behind ``x`` can start now only within
    ``[now, H)``. A job whose earliest fit is at or after ``H`` does not touch that part, so its
    placement is put off: ``deferred[ints[3]:ints[4]]`` holds such positions, in queue order,
    ``bound`` a lower bound of each one's start. The profile then lacks only windows at or after
    ``H`` (``H`` only comes closer as ``x`` grows), so it is exact before ``H`` and has at least
    as many processors free after: a job whose earliest fit in it lies within ``[now, H)`` has
    that same fit in the exact profile (nothing fits earlier in a profile with fewer free; that
    window is free in both), and a job with no fit starting before ``H`` in it has none in the
    exact one either and is deferred. A job whose first fit starts before ``H`` and ends after
    it may be blocked by a deferred window: the horizon is first moved out to its end as far as
    the deferred jobs allow (:func:`_advance`) and the job is looked at again against the new
    horizon (placed if its fit ends by it, put off if it no longer fits before it); if it still
    reaches past, the deferred jobs are placed first, in order, then it. A deferred job is
    placed after later jobs that fit before ``H``; it never sees them, since its start is at or
    after ``H``. The deferred jobs are placed before any job asked for on demand behind them,
    and before continuing past the early stop. So every start is the one of the pass without
    deferral. A job of a shape (width, estimate) whose last job in the pass was put off, or placed,
    at or after the horizon is put off at once with that start as its bound, before any search:
    its fit cannot be earlier (the profile only lost processors since), and the horizon only comes
    closer. At heavy load most of a pass's jobs repeat a shape seen earlier in it (seed 000's
    sweep: ~48 M of ~56 M jobs looked at in its dearest conservative run), so this is the pass's
    common path. Next, a job the memo shows has no fit before the horizon (:func:`_dominated`: a no
    wider, no longer shape put off in the pass) is put off the same way, with the horizon (or a
    higher bound already known) as its bound: where estimates rarely repeat (a remote copy's
    includes its own transfer time) this is the common path instead (~21 M of ~33 M looks in
    seed 000's dearest data-transfer run).

    Step hints (optional, by the arrays' lengths): when ``first_free`` has ``2 * (capacity + 1)``
    entries, ``first_free[capacity + 1 + p]`` keeps the step where ``first_free[p]`` was found; when
    ``shape_start`` is twice as long as ``shape_p``, ``shape_start[len(shape_p) + h]`` keeps the step
    that held the start of slot ``h`` (both as floats). Within a pass steps are only added, so the
    step holding an instant only moves back: a search for it starts from its hint (:func:`_seek`,
    a galloping search; the hint is checked and any wrong one only costs a full bisection), instead
    of bisecting the whole profile twice per job. They change no answer; :func:`cut` leaves them
    stale, which is safe. (Measured: of ~97 M step searches in seed 000's dearest simulation,
    ~96 M now start from a hint, and only ~0.6 M of those hints are wrong.)

    ``memo`` (:data:`MEMO_SIZE` floats; zeros for a new pass): the pass's memo of shapes put off with
    no fit before an instant (:func:`_dominated`, :func:`_note`): a job it shows cannot start before
    its limit is put off without a walk, as the walk would have put it off.

    ``reach`` (on demand only; ``inf``: exact): the caller only needs the last job's start if
    its window ends before ``reach``. Then the deferred jobs are first advanced to ``reach``
    (:func:`_advance`), the same deferral runs with the horizon that gives, and the last job is
    placed only if its first fit in the profile as it is ends before ``reach``: that profile has
    at least as many processors free as the exact one, so its first fit is a lower bound of the
    exact start and a window ending at or after ``reach`` there ends at or after ``reach`` in the
    exact profile too. Otherwise it stays deferred (state unchanged) with that lower bound; if it
    was deferred already and the advance cannot settle it, every deferred job up to it is placed.
    """
    n = ints[0]
    really_free = ints[2]
    half = shape_p.shape[0] >> 1
    mask = half - 1
    stop_early = shortest.shape[0] > 0
    # where the step hints are kept, if the arrays have room for them (0: not kept)
    ff_at = _hints_at(first_free, capacity + 1)
    shape_at = _hints_at(shape_start, shape_p.shape[0])
    zero = t_zero[0]
    gen = ints[GEN] << 32
    target = -1
    limit = reach
    if not stop_early and reach < np.inf:
        target = until - 1
        if target < ints[1] and state[queue[target]] != 3:
            return 0
        if ints[3] < ints[4]:
            # the horizon moved out to ``reach`` as far as the deferred jobs allow
            ints[0] = n
            zero, limit = _advance(
                times, free, ints, zero, memo, queue, procs, durations, starts, state, deferred, bound, until, reach
            )
            t_zero[0] = zero
            if ints[0] == NO_END:
                ints[0] = n
                return NO_END
            n = ints[0]
        if target < ints[1]:
            qt = queue[target]
            if state[qt] != 3:
                return 0  # placed by the advance
            if _deferred_bound(ints, deferred, bound, target) + durations[qt] >= reach:
                return 0  # still deferred, and its window cannot end before ``reach`` (NaN: not deferred)
    if not stop_early and ints[3] < ints[4] and (target < 0 or target < ints[1]):
        zero = _resolve(
            times, free, ints, zero, shape_p, shape_d, shape_start, queue, procs, durations, starts, state, deferred,
            bound, until,
        )  # fmt: skip
        t_zero[0] = zero
        if ints[0] == NO_END:
            ints[0] = n
            return NO_END
        n = ints[0]
        if ints[3] < ints[4]:
            return 0  # the jobs up to ``until`` are placed; the rest stay deferred
    x = ints[1]
    # the stronger stop (see above), when ``shortest`` holds the one-processor minima too
    ones_at = until + 1 if stop_early and shortest.shape[0] == 2 * (until + 1) else 0
    next_check = x
    while x < until:
        horizon = -np.inf
        if stop_early:
            md = shortest[x]
            if md != -np.inf and (really_free <= 0 or md == np.inf or zero < now + md):
                break
            if ones_at > 0 and md != -np.inf and x >= next_check:
                next_check = x + STOP_EVERY
                md1 = shortest[ones_at + x]
                if zero < now + md1 and (really_free < TWO or _fewer_before(times, free, n, now + md, TWO)):
                    break
            horizon = now + longest[x]
            if zero < horizon:
                horizon = zero  # a window that starts now ends at or before the first step with none free
        elif target >= 0:
            horizon = limit
        q = queue[x]
        p = procs[q]
        duration = durations[q]
        if p > capacity:
            ints[0] = n
            ints[1] = x
            return TOO_WIDE
        key = gen | p
        h = _shape_slot(shape_p, shape_d, ZERO, mask, key, p, duration)
        seen = shape_p[h] == key
        if (
            x != target
            and horizon > now
            and ((seen and shape_start[h] >= horizon) or _dominated(memo, p, duration, horizon))
        ):
            # no fit before the horizon, known with no search: the last job of this shape in the
            # pass starts (or is bounded) at or after it (the profile only loses processors), or a
            # no wider, no longer shape put off in the pass has none (see :func:`_dominated`). Put
            # off with the best bound at hand, which its shape's entry keeps for the next one.
            start = horizon
            if seen and shape_start[h] > start:
                start = shape_start[h]
            if first_free[p] > start:
                start = first_free[p]
            bound[ints[4]] = start
            deferred[ints[4]] = x
            ints[4] += 1
            shape_p[h] = key
            shape_d[h] = duration
            shape_start[h] = start
            x += 1
            continue
        after = first_free[p]
        if after == -np.inf:
            after = now
            k = _seek(times, n, after, ZERO)
        else:
            k = _seek(times, n, after, _hint(first_free, ff_at, p, n, -1))
        while k < n and free[k] < p:
            k += 1
        if k < n and times[k] > after:
            after = times[k]
        first_free[p] = after
        _keep_hint(first_free, ff_at, p, k)
        at = k  # the step holding ``after`` (``n``: no step from there has ``p`` free)
        if shape_p[h] == key and shape_start[h] > after:
            after = shape_start[h]
            at = _seek(times, n, after, _hint(shape_start, shape_at, h, n, k))
        start = np.inf
        i = 0
        j = 0
        # the last instant its fit may start at and still matter: the horizon, or for the job asked
        # for with a ``reach``, that reach (its window must end before it)
        limit_x = reach if x == target else horizon
        resolve_all = False
        if limit_x > now or x == target:
            # (a shape the memo shows cannot start before the limit is put off with no walk)
            known = after < limit_x and _dominated(memo, p, duration, limit_x)
            if after < limit_x and not known:
                start, i, j = _walk(times, free, n, at, after, p, duration, limit_x)
            if (
                start != np.inf
                and start + duration > horizon
                and ints[3] < ints[4]
                and not (x == target and start + duration >= reach)
            ):
                # it reaches past the horizon, where deferred jobs may block it: move the horizon
                # out to its end as far as they allow (:func:`_advance`) and look again; if it
                # still reaches past, every deferred job ahead is placed first (below)
                ints[0] = n
                zero, limit_x = _advance(
                    times, free, ints, zero, memo, queue, procs, durations, starts, state, deferred, bound, x,
                    start + duration,
                )  # fmt: skip
                if ints[0] == NO_END:
                    ints[0] = n
                    ints[1] = x
                    t_zero[0] = zero
                    return NO_END
                n = ints[0]
                start = np.inf
                if after < limit_x:
                    # (steps were only added: the one holding ``after`` is at or after ``at``)
                    at = _seek(times, n, after, at)
                    start, i, j = _walk(times, free, n, at, after, p, duration, limit_x)
                resolve_all = start + duration > limit_x if start != np.inf else x == target
            if not resolve_all and (start == np.inf or (x == target and start + duration >= reach)):
                # no fit starts before the horizon, or the job asked for cannot end before
                # ``reach``: put it off, with a lower bound of its start
                if start == np.inf:
                    start = after if after > limit_x else limit_x
                bound[ints[4]] = start
                deferred[ints[4]] = x
                ints[4] += 1
                if not known:
                    _note(memo, p, duration, start)
                shape_p[h] = key
                shape_d[h] = duration
                shape_start[h] = start
                _keep_hint(shape_start, shape_at, h, at)
                x += 1
                continue
        if start == np.inf or resolve_all:
            if ints[3] < ints[4]:
                ints[0] = n
                zero = _resolve(
                    times, free, ints, zero, shape_p, shape_d, shape_start, queue, procs, durations, starts, state,
                    deferred, bound, x,
                )  # fmt: skip
                if ints[0] == NO_END:
                    ints[0] = n
                    ints[1] = x
                    t_zero[0] = zero
                    return NO_END
                n = ints[0]
            start, i, j = _walk(times, free, n, _seek(times, n, after, at), after, p, duration, np.inf)
            if i >= n:
                ints[0] = n
                ints[1] = x
                t_zero[0] = zero
                return NO_END
        if duration > 0 and p != 0:
            n, zero = _put(times, free, n, i, j, start, start + duration, p, zero)
        shape_p[h] = key
        shape_d[h] = duration
        shape_start[h] = start
        _keep_hint(shape_start, shape_at, h, i)
        starts[q] = start
        if start <= now and p <= really_free:
            state[q] = 1
            really_free -= p
        else:
            state[q] = 0
        x += 1
    ints[0] = n
    ints[1] = x
    ints[2] = really_free
    t_zero[0] = zero
    return 0


# (its kernels hold ``move``'s code: see :func:`~metasched._jit.drop_stale_cache`)
drop_stale_cache(globals(), (_jit.__file__,))
