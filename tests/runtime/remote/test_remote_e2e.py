"""End to end with remote sites: the live metaqueue drives batch systems reached over SSH only.

``sshA`` is a Slurm partition, ``sshB`` the Grid Engine (a second Slurm partition when Grid Engine is not
up). ``sshA``'s placeholders talk to the metaqueue over the SSH transport (restricted key, forced-command
gateway); ``sshB``'s over a reverse tunnel opened on the site's master connection; a third site is
unreachable the whole time. Proves: every job completes exactly once, both remote sites ran jobs
through their own transport, the dead site is reported down with its error and never stops the others.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from metasched.runtime.manager import SiteManager, load_sites
from metasched.runtime.metaqueue.store import Store
from tests.runtime.lattice import lattice

from .conftest import SshTestbed, restricted_key

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(900)]
SRC = str(Path(__file__).resolve().parents[3] / "src")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _toml_table(d: dict[str, object]) -> str:
    parts = []
    for k, v in d.items():
        parts.append(f"{k} = {v}" if isinstance(v, int) else f'{k} = "{v}"')
    return "{ " + ", ".join(parts) + " }"


def test_workflow_over_two_remote_sites_and_a_dead_one(ssh_testbed: SshTestbed, tmp_path: Path) -> None:
    slurm_conf = os.environ.get("SLURM_CONF")
    if not slurm_conf or subprocess.run(["squeue", "-h"], capture_output=True, check=False, timeout=20).returncode != 0:
        pytest.skip("Slurm not available (scripts/testbed/up starts it as root; SLURM_CONF unset)")
    sge = bool(os.environ.get("SGE_ROOT")) and (
        subprocess.run(["qstat"], capture_output=True, check=False, timeout=20).returncode == 0
    )
    home = tmp_path / "home"
    home.mkdir()
    ledger = tmp_path / "ledger.txt"
    token_file = home / "token"
    token_file.write_text("e2e-token-0123456789\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    db = f"sqlite:///{tmp_path / 'mq.db'}"
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(home)}
    # 0.5 s jobs and one placeholder at site A: A alone would need > 12 s, so B (slower to come up through its
    # tunnel) surely carries some of the wide levels; with faster claims A used to take every job.
    command = f'echo "end {{name}} $METASCHED_SITE" >> {ledger}; sleep 0.5'
    specs = lattice(5, command)  # 25 jobs over 9 levels
    store = Store.open(db, lease_s=30)
    store.submit(specs)
    server = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--token-file", str(token_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "ab"),  # noqa: SIM115
    )
    manager: SiteManager | None = None
    try:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/openapi.json", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        with restricted_key(ssh_testbed, url, "e2e-token-0123456789", site="sshA") as rk:
            lo = ssh_testbed.data["hosts"]["lo"]
            site_ssh = {
                "host": lo["host"],
                "port": lo["port"],
                "user": "root",  # the agent needs this machine's Python, readable by root only
                "key": ssh_testbed.data["key"],
                "known_hosts": ssh_testbed.data["known_hosts"],
                "host_key_policy": "yes",
                "ssh_config": ssh_testbed.data["ssh_config"],
            }
            mq_ssh = {
                "host": lo["host"],
                "port": lo["port"],
                "user": ssh_testbed.user,
                "key": str(rk.key),
                "known_hosts": ssh_testbed.data["known_hosts"],
                "ssh_config": "/dev/null",
            }
            common = (
                'cpus = 1\nwall_time = "120s"\nidle_cancel = "3s"\n'
                f'python = "{sys.executable}"\nenv = {_toml_table({"PYTHONPATH": SRC, "METASCHED_HOME": str(home)})}\n'
            )
            set_env = f"SLURM_CONF={slurm_conf}"
            if sge:  # site B is the Grid Engine, reached the same way
                set_env += f" SGE_ROOT={os.environ['SGE_ROOT']} SGE_CELL={os.environ.get('SGE_CELL', 'default')}"
            ssh_line = _toml_table(site_ssh)[:-2] + f', options = {{ SetEnv = "{set_env}" }} }}'
            b_adapter, b_queue = ("gridengine", "siteB.q") if sge else ("slurm", "siteB")
            (tmp_path / "sites.toml").write_text(
                f'[sites.sshA]\nadapter = "slurm"\nqueue = "siteA"\nlimit = 1\ninitial = 1\n{common}ssh = {ssh_line}\n'
                f'transport = "ssh"\nmetaqueue_ssh = {_toml_table(mq_ssh)}\n\n'
                f'[sites.sshB]\nadapter = "{b_adapter}"\nqueue = "{b_queue}"\nlimit = 3\ninitial = 2\n'
                f"{common}ssh = {ssh_line}\n"
                f'transport = "tunnel"\ntunnel_port = {_free_port()}\n\n'
                f'[sites.dead]\nadapter = "slurm"\nqueue = "siteC"\nlimit = 3\ninitial = 2\n{common}'
                f'ssh = {{ host = "127.0.0.1", port = 1, user = "root", connect_timeout_s = 2 }}\n'
            )
            manager = SiteManager(
                store,
                load_sites(tmp_path / "sites.toml"),
                db_url=db,
                server=url,
                token_file=str(token_file),
                workdir=tmp_path / "ph",
            )
            t0 = time.time()
            manager.run(interval_s=0.5, until_idle=True, max_s=240)
            elapsed = time.time() - t0
            health = manager.health()
    finally:
        if manager is not None:
            manager.close()
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=20)
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    counts = store.counts()
    assert counts.get("done", 0) == 25, f"not all done after {elapsed:.0f} s: {counts}"
    ends = Counter(line.split()[1] for line in ledger.read_text().splitlines() if line.startswith("end "))
    assert set(ends) == {s.name for s in specs} and set(ends.values()) == {1}, ends
    sites_used = {line.split()[2] for line in ledger.read_text().splitlines()}
    assert sites_used <= {"sshA", "sshB"} and sites_used, sites_used
    by_site = Counter(j["site"] for j in store.jobs(states=["done"]))
    assert by_site["sshA"] > 0 and by_site["sshB"] > 0, by_site  # both transports carried claims
    assert health["dead"]["state"] == "down" and "refused" in str(health["dead"]["last_error"])
    assert health["dead"]["ssh"]["failures"] >= 1
    assert health["sshA"]["state"] == "up" and health["sshB"]["state"] == "up"
    assert not store.placeholders("dead")
    # ... and recorded for `metasched sites list`.
    rows = {r["name"]: r["config"] for r in store.sites()}
    assert rows["dead"]["reach"]["state"] == "down" and "refused" in rows["dead"]["reach"]["error"]
    assert rows["dead"]["where"] == "root@127.0.0.1:1" and rows["sshA"]["reach"]["state"] == "up"


def test_site_cut_off_mid_run_and_brought_back(ssh_testbed: SshTestbed, netns_lock: None, tmp_path: Path) -> None:
    """Site ``far`` lives in network namespace ``msa`` (its own sshd; Slurm reached through the veth): its
    link is cut while placeholders are queued and running there, then restored. The manager marks it
    down, keeps feeding ``near``, brings ``far`` back, and every job still completes exactly once."""
    slurm_conf = os.environ.get("SLURM_CONF")
    if not slurm_conf or subprocess.run(["squeue", "-h"], capture_output=True, check=False, timeout=20).returncode != 0:
        pytest.skip("Slurm not available (scripts/testbed/up starts it as root; SLURM_CONF unset)")
    if not ssh_testbed.has("msa"):
        pytest.skip("SSH testbed without network namespaces")
    msa = ssh_testbed.data["hosts"]["msa"]
    # The same Slurm, seen from inside the namespace: its controller through the veth address.
    far_conf = tmp_path / "slurm-far.conf"
    far_conf.write_text(
        "\n".join(
            f"SlurmctldHost=localhost({msa['back']})" if line.startswith("SlurmctldHost=") else line
            for line in Path(slurm_conf).read_text().splitlines()
        )
        + "\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    ledger = tmp_path / "ledger.txt"
    token_file = home / "token"
    token_file.write_text("cut-token-0123456789\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    db = f"sqlite:///{tmp_path / 'mq.db'}"
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(home)}
    # 36 jobs of 2 s: near alone (3 slots) needs ~24 s for them, so work is left while far is down (with
    # 0.5 s jobs near finished everything before far was even marked down, in CI).
    specs = lattice(6, f'echo "end {{name}} $METASCHED_SITE" >> {ledger}; sleep 2')
    store = Store.open(db, lease_s=30)
    store.submit(specs)
    server = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--token-file", str(token_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "ab"),  # noqa: SIM115
    )

    def site(name: str, queue: str, host: str, ssh_port: int, conf: Path | str) -> str:
        target = {
            "host": host,
            "port": ssh_port,
            "user": "root",
            "key": ssh_testbed.data["key"],
            "known_hosts": ssh_testbed.data["known_hosts"],
            "host_key_policy": "yes",
            "ssh_config": ssh_testbed.data["ssh_config"],
            "connect_timeout_s": 2,
            "keepalive_s": 1,
        }
        return (
            f'[sites.{name}]\nadapter = "slurm"\nqueue = "{queue}"\ncpus = 1\nwall_time = "120s"\nlimit = 3\n'
            f'initial = 2\nidle_cancel = "3s"\ncommand_timeout = "4s"\npython = "{sys.executable}"\n'
            f"env = {_toml_table({'PYTHONPATH': SRC, 'METASCHED_HOME': str(home)})}\n"
            f'ssh = {_toml_table(target)[:-2]}, options = {{ SetEnv = "SLURM_CONF={conf}" }} }}\n'
        )

    lo = ssh_testbed.data["hosts"]["lo"]
    (tmp_path / "sites.toml").write_text(
        site("far", "siteA", msa["host"], msa["port"], far_conf)
        + "\n"
        + site("near", "siteB", lo["host"], lo["port"], slurm_conf)
    )
    events: list[tuple[str, float, dict[str, object]]] = []
    manager: SiteManager | None = None
    try:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/openapi.json", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        manager = SiteManager(
            store,
            load_sites(tmp_path / "sites.toml"),
            db_url=db,
            server=url,
            token_file=str(token_file),
            workdir=tmp_path / "ph",
        )
        t0 = time.time()
        cut_at: float | None = None
        while time.time() - t0 < 300:
            manager.tick()
            done = store.counts().get("done", 0)
            if cut_at is None and done >= 3:
                subprocess.run(["ip", "link", "set", msa["veth"], "down"], check=True, timeout=20)
                cut_at = time.time()
                events.append(("cut", cut_at, {"done": done}))
            elif cut_at is not None and len(events) == 1 and manager.health()["far"]["state"] == "down":
                events.append(("down", time.time(), {"done": done, **manager.health()["far"]}))
            elif len(events) == 2 and time.time() - cut_at > 12:
                subprocess.run(["ip", "link", "set", msa["veth"], "up"], check=True, timeout=20)
                events.append(("restored", time.time(), {"done": done}))
            elif len(events) == 3 and manager.health()["far"]["state"] == "up":
                events.append(("back", time.time(), {"done": done}))
            if manager.is_idle() and len(events) >= 4:
                break
            time.sleep(0.5)
        manager.shutdown()
    finally:
        subprocess.run(["ip", "link", "set", msa["veth"], "up"], check=False, timeout=20)
        if manager is not None:
            manager.close()
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=20)
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    kinds = [e[0] for e in events]
    assert kinds == ["cut", "down", "restored", "back"], events
    counts = store.counts()
    assert counts.get("done", 0) == 36, f"not all done: {counts}; events {events}"
    ends = Counter(line.split()[1] for line in ledger.read_text().splitlines() if line.startswith("end "))
    assert set(ends) == {s.name for s in specs} and set(ends.values()) == {1}, ends
    # While far was down, near kept completing jobs.
    down_done = int(events[1][2]["done"])  # type: ignore[call-overload]
    restored_done = int(events[2][2]["done"])  # type: ignore[call-overload]
    assert restored_done > down_done, events


def test_staging_inputs_in_outputs_back_before_completion(ssh_testbed: SshTestbed, tmp_path: Path) -> None:
    """Jobs declare inputs and outputs in the workflow file; a Slurm site reached over SSH runs them in
    their own directories. A dependent job checks, on the metaqueue side, that its predecessors' outputs
    are already back when it starts: a job is complete only once its outputs have come home."""
    from metasched.runtime.metaqueue.workflow import read_workflow

    slurm_conf = os.environ.get("SLURM_CONF")
    if not slurm_conf or subprocess.run(["squeue", "-h"], capture_output=True, check=False, timeout=20).returncode != 0:
        pytest.skip("Slurm not available (scripts/testbed/up starts it as root; SLURM_CONF unset)")
    wf = tmp_path / "wf"
    (wf / "data").mkdir(parents=True)
    for i in range(3):
        (wf / "data" / f"n{i}.txt").write_text(f"{i + 1}\n")
    jobs = [
        f"- name: j{i}\n"
        f"  command: 'echo $(( $(cat in.txt) * 10 )) > out.txt && mkdir -p logs && hostname > logs/host.txt'\n"
        f'  inputs: ["data/n{i}.txt:in.txt"]\n'
        f'  outputs: ["out.txt:results/j{i}.txt", "logs/:results/logs-j{i}/"]\n'
        for i in range(3)
    ]
    check = " && ".join(f"grep -qx {10 * (i + 1)} {wf}/results/j{i}.txt" for i in range(3))
    jobs.append(f"- name: final\n  after: [j0, j1, j2]\n  command: '{check}'\n")
    (wf / "workflow.yaml").write_text("".join(jobs))
    home = tmp_path / "home"
    home.mkdir()
    token_file = home / "token"
    token_file.write_text("stage-token-0123456789\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    db = f"sqlite:///{tmp_path / 'mq.db'}"
    store = Store.open(db, lease_s=30)
    store.submit(read_workflow(wf / "workflow.yaml"))
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(home)}
    server = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--token-file", str(token_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "ab"),  # noqa: SIM115
    )
    lo = ssh_testbed.data["hosts"]["lo"]
    target = {
        "host": lo["host"],
        "port": lo["port"],
        "user": "root",
        "key": ssh_testbed.data["key"],
        "known_hosts": ssh_testbed.data["known_hosts"],
        "host_key_policy": "yes",
        "ssh_config": ssh_testbed.data["ssh_config"],
    }
    (tmp_path / "sites.toml").write_text(
        f'[sites.far]\nadapter = "slurm"\nqueue = "siteB"\ncpus = 1\nwall_time = "120s"\nlimit = 2\ninitial = 2\n'
        f'idle_cancel = "3s"\npython = "{sys.executable}"\nstage_root = "{tmp_path / "site-stage"}"\n'
        f"env = {_toml_table({'PYTHONPATH': SRC, 'METASCHED_HOME': str(home)})}\n"
        f'ssh = {_toml_table(target)[:-2]}, options = {{ SetEnv = "SLURM_CONF={slurm_conf}" }} }}\n'
    )
    manager: SiteManager | None = None
    try:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/openapi.json", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        manager = SiteManager(
            store,
            load_sites(tmp_path / "sites.toml"),
            db_url=db,
            server=url,
            token_file=str(token_file),
            workdir=tmp_path / "ph",
        )
        manager.run(interval_s=0.5, until_idle=True, max_s=200)
    finally:
        if manager is not None:
            manager.close()
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=20)
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    states = {j["name"]: (j["state"], j["exit_code"]) for j in store.jobs()}
    assert states == {name: ("done", 0) for name in ("j0", "j1", "j2", "final")}, states
    for i in range(3):
        assert (wf / "results" / f"j{i}.txt").read_text() == f"{10 * (i + 1)}\n"
        assert (wf / "results" / f"logs-j{i}" / "host.txt").read_text().strip()
    # Each run had its own directory on the site, with the whole marker sequence.
    dirs = sorted((tmp_path / "site-stage").iterdir())
    assert len(dirs) == 3 and all((d / ".staged-out").exists() and (d / ".finished").read_text() == "0\n" for d in dirs)
