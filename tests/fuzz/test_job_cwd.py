"""A job whose working directory does not exist fails saying which directory is missing (issue 33)."""

from __future__ import annotations

from pathlib import Path

from metasched.runtime.metaqueue.protocol import StoreTransport
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.placeholder.agent import Agent


def test_missing_working_directory_is_named(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    gone = tmp_path / "gone"
    (bad,) = store.submit([JobSpec("true", cwd=str(gone))])
    agent = Agent(StoreTransport(store), site="local", log_dir=tmp_path / "logs", idle_exit_s=0.5)
    assert agent.run() == "done"
    row = store.job(str(bad))
    assert (row["state"], row["exit_code"]) == ("failed", 127)
    text = Path(row["stderr_path"]).read_text()
    assert f"working directory does not exist (or is not a directory), {gone}" in text
    assert "/bin/bash" not in text and "/bin/sh" not in text
