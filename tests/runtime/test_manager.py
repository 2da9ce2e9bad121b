"""The site manager with the default local site (no cluster): the newcomer's path, and site configs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metasched.runtime.manager import SiteConfig, SiteManager, load_sites
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.store import JobSpec, Store

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_default_is_one_local_site_sized_to_this_machine() -> None:
    (site,) = load_sites(None)
    assert (site.name, site.adapter, site.limit) == ("local", "local", os.cpu_count())


def test_site_config_errors_name_the_problem(tmp_path: Path) -> None:
    f = tmp_path / "sites.toml"
    f.write_text('[sites.a]\nadapter = "lsf"\n')
    with pytest.raises(StoreError, match="site 'a': unknown adapter 'lsf'; known: gridengine, local, pbs, slurm"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\nqueues = "x"\n')
    with pytest.raises(StoreError, match="unknown key\\(s\\) queues"):
        load_sites(f)
    f.write_text('[sites.a]\nadapter = "slurm"\nqueue = "short"\nwall_time = "30m"\nlimit = 8\nlicences = {m = 2}\n')
    (a,) = load_sites(f)
    assert (a.queue, a.wall_time_s, a.limit, a.licences) == ("short", 1800.0, 8, {"m": 2})


def test_manager_runs_workflow_on_local_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=10)
    store.submit(
        [
            JobSpec("true", name="a"),
            JobSpec("true", name="b", after=["a"]),
            JobSpec("exit 1", name="c"),
            JobSpec("true", name="d", after=["c"]),
        ]
    )
    cfg = SiteConfig(name="local", adapter="local", limit=2, initial=1, increase_below_s=60, idle_cancel_s=0)
    manager = SiteManager(store, [cfg], db_url=db, workdir=tmp_path / "ph")
    manager.run(interval_s=0.2, until_idle=True, max_s=120)
    assert {j["name"]: j["state"] for j in store.jobs()} == {"a": "done", "b": "done", "c": "failed", "d": "dep_failed"}
    phs = store.placeholders("local")
    assert phs and all(p["state"] not in ("submitted", "queued", "running") for p in phs)
    assert any(p["decision"] == "increase" for p in phs)  # local queue wait is short: more placeholders
