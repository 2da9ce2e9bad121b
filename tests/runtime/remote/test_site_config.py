"""Remote site configuration in sites.toml, and the placeholder command the manager builds for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasched.runtime.manager import SiteManager, load_sites
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.store import Store
from metasched.runtime.remote.ssh import SshRunner


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(text)
    return path


def test_remote_sites_parse_and_build_their_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/local/only")
    path = _write(
        tmp_path,
        """
[sites.a]
adapter = "slurm"
ssh = { host = "login.a.org", user = "alice", key = "keys/a", jump = "gw.org" }
python = "/home/alice/venv/bin/python"
transport = "ssh"
metaqueue_ssh = { host = "ws.lab.org", user = "alice", key = "/home/alice/.ssh/ph", port = 2222 }
env = { OMP_NUM_THREADS = "1" }

[sites.b]
adapter = "gridengine"
ssh = { host = "b.org" }
transport = "tunnel"
tunnel_port = 18765
""",
    )
    a, b = load_sites(path)
    assert a.ssh is not None and a.ssh.identity_file == tmp_path / "keys" / "a" and a.ssh.jump == "gw.org"
    store = Store.open(f"sqlite:///{tmp_path / 'mq.db'}")
    manager = SiteManager(store, [a, b], server="http://127.0.0.1:8765", token_file="/t/token", workdir=tmp_path)
    try:
        assert all(isinstance(s.runner, SshRunner) for s in manager.sites)
        assert str(manager.sites[0].adapter.workdir) == "metasched-placeholders/a"  # under the home on the site
        cmd_a = manager.placeholder_command(a, "p1")
        assert cmd_a[0] == "/home/alice/venv/bin/python"
        assert cmd_a[cmd_a.index("--ssh") + 1] == "alice@ws.lab.org"
        assert cmd_a[cmd_a.index("--ssh-port") + 1] == "2222" and "--server" not in cmd_a
        cmd_b = manager.placeholder_command(b, "p2")
        assert cmd_b[0] == "python3"
        assert cmd_b[cmd_b.index("--server") + 1] == "http://127.0.0.1:18765"
        # This machine's paths are not handed to a remote site; the site's own env is.
        assert manager._env(a) == {"OMP_NUM_THREADS": "1"}
    finally:
        manager.close()
        store.close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('adapter = "local"\nssh = { host = "h" }', "local adapter cannot run on a remote site"),
        ('adapter = "slurm"\nssh = "h"', "ssh must be a table"),
        ('adapter = "slurm"\nssh = { host = "h", colour = 1 }', "unknown key"),
        ('adapter = "slurm"\ntransport = "carrier-pigeon"', "transport must be one of"),
        ('adapter = "slurm"\ntransport = "ssh"', "needs metaqueue_ssh"),
        ('adapter = "slurm"\ntransport = "tunnel"', "needs an ssh site and tunnel_port"),
    ],
)
def test_bad_remote_config_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        load_sites(_write(tmp_path, f"[sites.x]\n{text}\n"))
