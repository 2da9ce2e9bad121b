"""``metasched logs`` of a job that ran on a remote site: read back over the site's SSH connection (issue 36).

The site is recorded the way ``metasched sites run`` records it (a real :class:`SiteManager` over a
``sites.toml`` whose ``ssh`` table points at the project's SSH test host); the job's command runs on that
host over SSH, and its outputs' paths are recorded as a placeholder there records them. Then the three
doors read them: the CLI (its own process), the Python client embedded, and the Python client over HTTP.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched import Client
from metasched.client import Error
from metasched.policy.claim import FreeResources
from metasched.runtime.manager import SiteManager, load_sites
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.remote.logs import Tail, parse_tail, read_local, shape, ssh_mapping
from metasched.runtime.remote.ssh import SshRunner, SshTarget
from tests.runtime.procs import start_logged, stop, wait_http

from .conftest import SshTestbed

SRC = str(Path(__file__).resolve().parents[3] / "src")
LINES = "".join(f"line {i}\n" for i in range(1, 101))  # 100 lines, 792 bytes


# ---------------------------------------------------------------------------------------- the shaping rule


@given(st.binary(max_size=300), st.integers(0, 400), st.integers(0, 40), st.booleans())
def test_shape_answers_a_suffix_and_says_when_it_is_cut(data: bytes, nbytes: int, nlines: int, lines: bool) -> None:
    text = data.decode("ascii", errors="replace").replace("\ufffd", "?")
    tail = Tail(lines=nlines) if lines else Tail(bytes=nbytes)
    cap = nbytes if not lines else len(text)
    fetched = text[len(text) - min(cap, len(text)) :]
    out = shape(fetched, len(text), tail, "f")
    assert text.endswith(out)
    assert out.truncated == (len(out) < len(text))
    if lines:
        assert out.count("\n") <= nlines
    else:
        assert len(out) <= nbytes


def test_tail_forms() -> None:
    assert parse_tail("20") == Tail(lines=20)
    assert parse_tail(5) == Tail(lines=5)
    assert parse_tail("10c") == Tail(bytes=10)
    assert parse_tail("4k") == Tail(bytes=4096)
    assert parse_tail("1M") == Tail(bytes=1 << 20)
    assert parse_tail(None) is None
    for bad in ("-3", "x", "3 lines", "2g"):
        with pytest.raises(ValueError, match="N lines, or Nc bytes"):
            parse_tail(bad)


def test_local_tail_and_note(tmp_path: Path) -> None:
    f = tmp_path / "out"
    f.write_text(LINES)
    last = read_local(str(f), Tail(lines=3))
    assert last == "line 98\nline 99\nline 100\n" and last is not None and last.truncated
    assert last.note == f"truncated: the last 3 lines (25 of 792 bytes) of {f}"
    whole = read_local(str(f), None)
    assert whole == LINES and whole is not None and not whole.truncated and whole.note is None
    assert read_local(str(tmp_path / "gone"), None) is None


def test_ssh_table_round_trip(ssh_testbed: SshTestbed) -> None:
    target = ssh_testbed.target("lo", jump="gw.example.org", options={"Compression": "yes"})
    assert SshTarget.from_mapping(ssh_mapping(target)) == target


def test_site_recorded_without_its_ssh_table_says_what_to_do(tmp_path: Path) -> None:
    """A remote site recorded by an older ``sites run`` (no ``ssh`` in its row) and a local file gone."""
    from metasched.runtime.metaqueue.userops import LogUnavailable, UserQueue

    store = Store.open(f"sqlite:///{tmp_path / 'mq.db'}")
    try:
        store.upsert_site("old", "slurm", {"where": "alice@login.old.org:22"}, {})
        store.upsert_site("here", "local", {"where": "local"}, {})
        jids = store.submit([JobSpec("true", name="a"), JobSpec("true", name="b")])
        for jid, site_name in zip(jids, ("old", "here"), strict=True):
            (job,) = store.claim(site_name, "p", FreeResources(1)).jobs
            store.complete(jid, "p", job.attempt, 0, stdout_path=f"/nowhere/{jid}.out", stderr_path=None)
        q = UserQueue(store)
        with pytest.raises(LogUnavailable, match=r"on site old \(alice@login.old.org:22\), whose ssh connection is"):
            q.logs("a")
        with pytest.raises(LogUnavailable, match=r"cannot read /nowhere/\d+.out \(stdout of job b\) on this machine"):
            q.logs("b")
    finally:
        store.close()


# ---------------------------------------------------------------------------------------- live, over SSH


@dataclass
class Site:
    db: str
    remote_dir: str
    runner: SshRunner
    env: dict[str, str]

    def run_job(self, command: str, site: str = "sshA") -> int:
        """Submit ``command``, run it on the SSH host as a placeholder at ``site`` would, record its end."""
        store = Store.open(self.db)
        try:
            (jid,) = store.submit([JobSpec(command, name=None)])
            (job,) = store.claim(site, "ph-1", FreeResources(1)).jobs
            out, err = f"{self.remote_dir}/{jid}.1.out", f"{self.remote_dir}/{jid}.1.err"
            res = self.runner.run(f"sh -c {shlex.quote(command)} > {shlex.quote(out)} 2> {shlex.quote(err)}")
            store.complete(jid, "ph-1", job.attempt, res.returncode, stdout_path=out, stderr_path=err)
            return int(jid)
        finally:
            store.close()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "metasched", *args, "--db", self.db]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def site(ssh_testbed: SshTestbed, tmp_path: Path) -> Iterator[Site]:
    """Two remote sites recorded by a real SiteManager: ``sshA`` (the loopback SSH host) and ``sshDead``
    (nothing listens on its port)."""
    tb = ssh_testbed.data
    lo = tb["hosts"]["lo"]
    common = (
        f'user = "{tb["user"]}", key = "{tb["key"]}", known_hosts = "{tb["known_hosts"]}", '
        f'host_key_policy = "yes", ssh_config = "{tb["ssh_config"]}", connect_timeout_s = 3'
    )
    toml = tmp_path / "sites.toml"
    toml.write_text(
        f'[sites.sshA]\nadapter = "slurm"\nqueue = "siteA"\nssh = {{ host = "{lo["host"]}", port = {lo["port"]}, '
        f"{common} }}\n"
        f'[sites.sshDead]\nadapter = "slurm"\nqueue = "siteA"\nssh = {{ host = "127.0.0.1", port = {_free_port()}, '
        f"{common} }}\n"
    )
    db = f"sqlite:///{tmp_path / 'mq.db'}"
    store = Store.open(db)
    manager = SiteManager(store, load_sites(toml), server="http://127.0.0.1:9", token_file="/t", workdir=tmp_path)
    manager.close()
    store.close()
    runner = SshRunner(ssh_testbed.target("lo"))
    remote_dir = runner.run("mktemp -d", check=True).stdout.strip()
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    env.pop("METASCHED_DB", None)
    try:
        yield Site(db, remote_dir, runner, env)
    finally:
        runner.run(["rm", "-rf", remote_dir])
        runner.dispose()


@pytest.mark.live
@pytest.mark.timeout(300)
def test_remote_logs_through_cli_and_embedded_client(site: Site) -> None:
    ok = site.run_job(f"printf {shlex.quote(LINES)}; echo warn >&2")
    bad = site.run_job("echo 'boom: no input' >&2; exit 3")

    # CLI: stdout whole; stderr; a failed job with only stderr shows its stderr
    r = site.cli("logs", str(ok))
    assert (r.returncode, r.stdout, r.stderr) == (0, LINES, "")
    assert site.cli("logs", str(ok), "--stderr").stdout == "warn\n"
    assert site.cli("logs", str(bad)).stdout == "boom: no input\n"

    # a tail: the last lines, and a note on stderr saying what was cut, naming the site and the path
    r = site.cli("logs", str(ok), "--tail", "2")
    assert r.returncode == 0 and r.stdout == "line 99\nline 100\n"
    path = f"{site.remote_dir}/{ok}.1.out"
    assert r.stderr == f"note: truncated: the last 2 lines (17 of 792 bytes) of {path} on site sshA\n"
    r = site.cli("logs", str(ok), "--tail", "4c")
    assert r.stdout == "100\n" and "(4 of 792 bytes)" in r.stderr
    r = site.cli("logs", str(ok), "--tail", "lots")
    assert r.returncode == 2 and r.stderr.startswith("error: --tail 'lots': N lines") and r.stdout == ""

    # the Python client on the embedded database
    c = Client(db=site.db)
    try:
        out = c.job(ok).logs()
        assert out == LINES and not getattr(out, "truncated", True)
        assert c.job(ok).logs("stderr") == "warn\n"
        assert c.job(bad).logs() == "boom: no input\n"
        tail = c.job(ok).logs(tail=1)
        assert tail == "line 100\n" and getattr(tail, "truncated", False) and getattr(tail, "size", 0) == 792
    finally:
        c.close()

    # the file removed on the site: one line naming the site and the path
    site.runner.run(["rm", "-f", path], check=True)
    r = site.cli("logs", str(ok), "--stdout")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == f"error: {path} on site sshA (stdout of job {ok}) no longer exists: removed since the job ran?\n"


@pytest.mark.live
@pytest.mark.timeout(300)
def test_unreachable_site_is_one_line(site: Site) -> None:
    jid = site.run_job("echo ran", site="sshDead")  # ran on the reachable host, recorded at the dead site
    r = site.cli("logs", str(jid))
    path = f"{site.remote_dir}/{jid}.1.out"
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: cannot read {path} on site sshDead (stdout of job {jid}): site sshDead is ")
    assert "unreachable" in r.stderr


@pytest.mark.live
@pytest.mark.timeout(300)
def test_remote_logs_over_http(site: Site, tmp_path: Path) -> None:
    ok = site.run_job(f"printf {shlex.quote(LINES)}")
    dead = site.run_job("echo ran", site="sshDead")
    port = _free_port()
    token_file = tmp_path / "token"
    token_file.write_text("logs-test-token-0123456789\n")
    argv = [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", site.db]
    proc = start_logged([*argv, "--token-file", str(token_file)], site.env, tmp_path / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(proc, f"{url}/openapi.json", tmp_path / "server.log")
        c = Client(url, token_file.read_text().strip())
        try:
            assert c.job(ok).logs() == LINES
            tail = c.job(ok).logs(tail="3")
            assert tail == "line 98\nline 99\nline 100\n"
            assert getattr(tail, "note", "") == (
                f"truncated: the last 3 lines (25 of 792 bytes) of {site.remote_dir}/{ok}.1.out on site sshA"
            )
            with pytest.raises(Error, match=r"site sshDead is unreachable.*\(HTTP 502\)"):
                c.job(dead).logs()
        finally:
            c.close()
        r = subprocess.run(
            [sys.executable, "-m", "metasched", "logs", str(ok), "--tail", "1", "--server", url],
            env={**site.env, "METASCHED_TOKEN": token_file.read_text().strip()},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0 and r.stdout == "line 100\n" and r.stderr.startswith("note: truncated: the last 1")
    finally:
        stop(proc)
