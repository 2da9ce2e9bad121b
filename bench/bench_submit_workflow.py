"""``submit-workflow`` at the speed of the store (issue 34, item 4): where the time of reading and
submitting an N-job workflow goes, against the pure-Python YAML loader measured in the same run.

Command: ``python bench/bench_submit_workflow.py [N]`` (default 10,000 no-op jobs in a chain, the
user path's workflow). Prints CPU seconds (the machine is shared: wall times vary with its load) of:
the pure-Python ``yaml.SafeLoader`` parse alone (the baseline, what ``read_workflow`` used before),
libyaml's ``CSafeLoader`` parse alone, ``read_workflow`` whole (C loader + typed validation + specs),
and ``Store.submit`` of the specs (one transaction) into a fresh SQLite file.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

from metasched.runtime.metaqueue.store import Store
from metasched.runtime.metaqueue.workflow import read_workflow


def _cpu(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main(n: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wf.yaml"
        path.write_text(
            "".join(f"- name: j{i}\n  command: 'true'\n" + (f"  after: [j{i - 1}]\n" if i else "") for i in range(n))
        )
        text = path.read_text()
        pure, _ = _cpu(lambda: yaml.load(text, Loader=yaml.SafeLoader))
        c, _ = _cpu(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
        whole, specs = _cpu(lambda: read_workflow(path))
        store = Store.open(f"sqlite:///{Path(tmp) / 'q.db'}")
        submit, ids = _cpu(lambda: store.submit(specs))  # type: ignore[arg-type]
        assert len(ids) == n  # type: ignore[arg-type]
    print(f"N = {n:,} jobs (CPU s)")
    print(f"  pure-Python SafeLoader parse  {pure:7.3f}   (baseline)")
    print(f"  libyaml CSafeLoader parse     {c:7.3f}   {pure / c:5.2f}x faster")
    print(f"  read_workflow (C + checks)    {whole:7.3f}   {pure / whole:5.2f}x faster than the baseline parse alone")
    print(f"  Store.submit (1 transaction)  {submit:7.3f}")
    print(f"  total                         {whole + submit:7.3f}   ({n / (whole + submit):,.0f} jobs/s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
