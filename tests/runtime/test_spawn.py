"""The placeholder's posix_spawn start of a job: what the child gets, and an agent's bad-cwd job."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.protocol import StoreTransport
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.placeholder.agent import Agent
from metasched.runtime.placeholder.spawn import Spawner

pytestmark = pytest.mark.skipif(not Spawner.available(), reason="needs glibc >= 2.29 (posix_spawn chdir action)")


def _run(sp: Spawner, argv: list[str], tmp: Path, cwd: str | None = None, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    out, err = tmp / "o", tmp / "e"
    code = sp.spawn(argv, env or {}, cwd, str(out), str(err)).wait()
    return code, out.read_text(), err.read_text()


def test_child_gets_env_cwd_files_and_empty_stdin(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "o").write_text("old content, longer than the new one\n")  # truncated, not overwritten
    code, out, err = _run(
        Spawner(),
        ["/bin/bash", "-c", "echo $FOO; pwd; cat; echo to-err >&2; exit 3"],
        tmp_path,
        cwd=str(work),
        env={"FOO": "bar baz"},
    )
    assert code == 3
    assert out == f"bar baz\n{work}\n"
    assert err == "to-err\n"


def test_placeholder_environment_is_kept_and_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MS_SPAWN_A", "from-placeholder")
    monkeypatch.setenv("MS_SPAWN_B", "from-placeholder")
    sp = Spawner()
    _, out, _ = _run(sp, ["/bin/bash", "-c", "echo $MS_SPAWN_A $MS_SPAWN_B"], tmp_path, env={"MS_SPAWN_B": "job"})
    assert out == "from-placeholder job\n"


def test_new_session_and_default_sigpipe(tmp_path: Path) -> None:
    # Python ignores SIGPIPE; a job must not inherit that (Popen's restore_signals).
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    code, out, _ = _run(
        Spawner(),
        [sys.executable, "-S", "-c", "import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())"],
        tmp_path,
    )
    assert (code, out) == (0, "True True\n")
    _, out, _ = _run(Spawner(), ["/bin/grep", "SigIgn", "/proc/self/status"], tmp_path)
    ignored = int(out.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_inherited_descriptor_does_not_reach_the_job(tmp_path: Path) -> None:
    r, w = os.pipe()
    os.set_inheritable(w, True)
    try:
        sp = Spawner()  # marks what the process inherited close-on-exec
        _, out, _ = _run(sp, ["/bin/bash", "-c", f"[ -e /proc/$$/fd/{w} ] && echo leaked || echo closed"], tmp_path)
        assert out == "closed\n"
    finally:
        os.close(r)
        os.close(w)


def test_killed_child_reports_minus_signal(tmp_path: Path) -> None:
    child = Spawner().spawn(["/bin/sleep", "30"], {}, None, str(tmp_path / "o"), str(tmp_path / "e"))
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL


def test_bad_cwd_or_program_raises_and_names_it(tmp_path: Path) -> None:
    sp = Spawner()
    with pytest.raises(OSError, match="nowhere"):
        sp.spawn(["/bin/true"], {}, str(tmp_path / "nowhere"), str(tmp_path / "o"), str(tmp_path / "e"))
    with pytest.raises(OSError, match="no-such-program"):
        sp.spawn([str(tmp_path / "no-such-program")], {}, None, str(tmp_path / "o"), str(tmp_path / "e"))


def test_agent_fails_a_job_it_cannot_start_and_goes_on(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    bad, good = store.submit([JobSpec("true", cwd=str(tmp_path / "gone")), JobSpec("echo ok", cwd=str(tmp_path))])
    logs = tmp_path / "logs"
    agent = Agent(StoreTransport(store), site="local", log_dir=logs, idle_exit_s=0.5)
    assert agent.run() == "done"
    by_id = {j["id"]: j for j in store.jobs()}
    assert (by_id[bad]["state"], by_id[bad]["exit_code"]) == ("failed", 127)
    assert "gone" in Path(by_id[bad]["stderr_path"]).read_text()
    assert (by_id[good]["state"], by_id[good]["exit_code"]) == ("done", 0)
    assert Path(by_id[good]["stdout_path"]).read_text() == "ok\n"
    assert store.claim("local", "x", FreeResources(1, 0, None)).action == "exit"
