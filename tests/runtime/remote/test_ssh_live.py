"""The SSH runner against real OpenSSH servers (``scripts/testbed/sshd.sh``): reuse, timeouts, copies, outages."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from metasched.runtime.remote.health import Backoff, SiteState
from metasched.runtime.remote.runner import CommandFailed, CommandRunner, CommandTimeout, SiteUnreachable
from metasched.runtime.remote.ssh import SshRunner

from .conftest import SCRIPT, SshTestbed

pytestmark = pytest.mark.live


def _master_pid(runner: SshRunner) -> str:
    res = subprocess.run(
        ["ssh", *runner._mux_argv(), "-O", "check", runner.ssh_target.destination],
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stderr.strip()


def test_runs_argv_and_shell_strings_remotely(lo_runner: SshRunner, ssh_testbed: SshTestbed) -> None:
    assert isinstance(lo_runner, CommandRunner)
    res = lo_runner.run(["printf", "%s|", "a b", "$HOME", "it's"])
    assert (res.returncode, res.stdout) == (0, "a b|$HOME|it's|")
    res = lo_runner.run("echo $HOME; id -un; echo oops >&2; exit 7")
    assert (res.returncode, res.stdout, res.stderr) == (7, f"{ssh_testbed.home}\n{ssh_testbed.user}\n", "oops\n")
    res = lo_runner.run("cat; echo $GREETING", input="line\n", env={"GREETING": "hello 'world'"})
    assert res.stdout == "line\nhello 'world'\n"
    with pytest.raises(CommandFailed, match="exit 1"):
        lo_runner.run("false", check=True)
    # A remote command that itself exits 255 is not mistaken for an unreachable site.
    assert lo_runner.run("exit 255").returncode == 255
    assert lo_runner.health.state is SiteState.UP


def test_one_master_serves_every_command(lo_runner: SshRunner) -> None:
    lo_runner.run("true")
    first = _master_pid(lo_runner)
    for _ in range(10):
        assert lo_runner.run(["echo", "x"]).stdout == "x\n"
    assert _master_pid(lo_runner) == first
    # Each command is a new session on the same TCP connection: the server sees one sshd connection process.
    res = lo_runner.run("ps -o ppid= -p $$")
    again = lo_runner.run("ps -o ppid= -p $$")
    assert res.stdout != "" and again.stdout != ""


def test_timeout_raises_and_marks_site_down_then_reconnects(ssh_testbed: SshTestbed) -> None:
    clock = [0.0]
    runner = SshRunner(ssh_testbed.target("lo"), backoff=Backoff(base_s=5.0), clock=lambda: clock[0])
    try:
        runner.run("true")
        with pytest.raises(CommandTimeout):
            runner.run("sleep 20", timeout_s=1.0)
        assert runner.health.state is SiteState.DOWN and runner.health.next_retry_at == 5.0
        with pytest.raises(SiteUnreachable, match="site is down"):
            runner.run("true")
        clock[0] = 5.0
        assert runner.run("echo back").stdout == "back\n"
        assert runner.health.state is SiteState.UP
    finally:
        runner.dispose()


def test_put_and_get_files_and_directories(lo_runner: SshRunner, remote_dir: str, tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "data.txt").write_text("payload\n")
    (tmp_path / "one.txt").write_text("one\n")
    lo_runner.put(tmp_path / "one.txt", f"{remote_dir}/one.txt")
    lo_runner.put(src, f"{remote_dir}/in")
    assert lo_runner.run(["cat", f"{remote_dir}/one.txt", f"{remote_dir}/in/sub/data.txt"]).stdout == "one\npayload\n"
    lo_runner.run(f"mkdir -p {remote_dir}/out && echo result > {remote_dir}/out/r.txt", check=True)
    lo_runner.get(f"{remote_dir}/out", tmp_path / "back")
    assert (tmp_path / "back" / "r.txt").read_text() == "result\n"
    with pytest.raises(CommandFailed):
        lo_runner.get(f"{remote_dir}/missing", tmp_path / "nothing")
    assert lo_runner.health.state is SiteState.UP  # a missing file is not an outage


def test_refused_connection_is_unreachable_with_backoff(ssh_testbed: SshTestbed) -> None:
    clock = [100.0]
    runner = SshRunner(ssh_testbed.target("lo", port=1), backoff=Backoff(base_s=2.0), clock=lambda: clock[0])
    try:
        with pytest.raises(SiteUnreachable, match="refused"):
            runner.run("true")
        assert (runner.health.state, runner.health.failures, runner.health.next_retry_at) == (SiteState.DOWN, 1, 102.0)
        started = time.monotonic()
        with pytest.raises(SiteUnreachable, match="site is down"):
            runner.run("true")
        assert time.monotonic() - started < 0.5  # no connection attempt while backing off
        clock[0] = 102.0
        with pytest.raises(SiteUnreachable):
            runner.run("true")
        assert runner.health.failures == 2 and runner.health.next_retry_at == 106.0
    finally:
        runner.dispose()


def test_unknown_host_key_is_refused_under_strict_checking(ssh_testbed: SshTestbed, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    runner = SshRunner(ssh_testbed.target("lo", known_hosts=empty))
    try:
        with pytest.raises(SiteUnreachable, match=r"(?i)host key"):
            runner.run("true")
    finally:
        runner.dispose()
    # accept-new learns the key once, into the project's own file.
    runner = SshRunner(ssh_testbed.target("lo", known_hosts=empty, host_key_policy="accept-new"))
    try:
        assert runner.run("true").ok
        assert "ssh-ed25519" in empty.read_text()
    finally:
        runner.dispose()


def test_jump_host(ssh_testbed: SshTestbed, netns_lock: None) -> None:
    if not ssh_testbed.has("msb"):
        pytest.skip("SSH testbed without network namespaces")
    lo = ssh_testbed.target("lo")
    # Reach msb through the loopback host; the jump leg takes its key and known_hosts from the -F file.
    jump_target = ssh_testbed.target("msb", jump=f"{lo.user}@{lo.host}:{lo.port}")
    runner = SshRunner(jump_target)
    try:
        assert runner.run("hostname -I").stdout.split()[0] == "10.77.2.2"
    finally:
        runner.dispose()


def test_reverse_tunnel_reaches_back(lo_runner: SshRunner, tmp_path: Path) -> None:
    import http.server
    import socket
    import socketserver
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"metaqueue here"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with socketserver.TCPServer(("127.0.0.1", 0), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        local_port = server.server_address[1]
        with socket.socket() as probe:  # a port free on the (same-machine) remote side
            probe.bind(("127.0.0.1", 0))
            remote_port = probe.getsockname()[1]
        lo_runner.keep_remote_forward(remote_port, local_port)
        try:
            cmd = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{remote_port}').read().decode())\""
            assert lo_runner.run(cmd, timeout_s=10).stdout.strip() == "metaqueue here"
            # A new master has no tunnel: keep_remote_forward puts it back (the site manager calls it every round).
            lo_runner.close()
            lo_runner.keep_remote_forward(remote_port, local_port)
            lo_runner.keep_remote_forward(remote_port, local_port)  # already there: no second forward
            assert lo_runner.run(cmd, timeout_s=10).stdout.strip() == "metaqueue here"
        finally:
            lo_runner.cancel_remote(remote_port, local_port)
            server.shutdown()


def test_cut_link_marks_site_down_and_others_carry_on(ssh_testbed: SshTestbed, netns_lock: None) -> None:
    if not (ssh_testbed.has("msa") and ssh_testbed.has("msb")):
        pytest.skip("SSH testbed without network namespaces")
    a = SshRunner(ssh_testbed.target("msa"), backoff=Backoff(base_s=0.5, max_s=1.0))
    b = SshRunner(ssh_testbed.target("msb"))
    try:
        assert a.run("true").ok and b.run("true").ok
        subprocess.run(["bash", str(SCRIPT), "cut", "msa"], check=True, timeout=60)
        try:
            with pytest.raises((CommandTimeout, SiteUnreachable)):
                a.run("true", timeout_s=2.0)
            assert a.health.state is SiteState.DOWN
            with pytest.raises(SiteUnreachable):
                a.run("true", timeout_s=2.0)
            assert b.run("hostname -I").stdout.split()[0] == "10.77.2.2"
        finally:
            subprocess.run(["bash", str(SCRIPT), "restore", "msa"], check=True, timeout=60)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert a.run("hostname -I", timeout_s=3.0).stdout.split()[0] == "10.77.1.2"
                break
            except (CommandTimeout, SiteUnreachable):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        assert a.health.state is SiteState.UP
    finally:
        a.dispose()
        b.dispose()


def test_parallel_commands_on_a_fresh_runner_share_one_master(ssh_testbed: SshTestbed) -> None:
    from metasched.runtime.remote.runner import run_many

    runner = SshRunner(ssh_testbed.target("lo"))
    try:
        out = run_many(runner, [["echo", str(i)] for i in range(16)], parallel=8)
        assert [r.stdout for r in out] == [f"{i}\n" for i in range(16)]  # type: ignore[union-attr]
        masters = subprocess.run(
            ["pgrep", "-f", f"ControlPath={runner.control_path} -o ControlPersist"], capture_output=True, text=True
        ).stdout.split()
        assert len(masters) == 1, masters
    finally:
        runner.dispose()
