"""``metasched licences set / unset / list`` and the ``[licences]`` table of sites.toml."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.runtime.manager import load_licences
from metasched.runtime.metaqueue.store import JobSpec, Store, StoreError


def test_set_list_unset(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    run = CliRunner()
    res = run.invoke(app, ["licences", "set", "matlab", "3", "--db", url])
    assert res.exit_code == 0, res.output
    store = Store.open(url)
    assert store.licences() == {"matlab": 3}
    store.upsert_site("A", "local", {}, {"matlab": 2})
    store.submit([JobSpec("true", name="m", licences={"matlab": 1})])
    from metasched.policy.claim import FreeResources

    assert store.claim("A", "a0", FreeResources(1)).jobs
    res = run.invoke(app, ["licences", "list", "--db", url])
    assert res.exit_code == 0 and "matlab" in res.output and "A=1/2" in res.output, res.output
    assert run.invoke(app, ["licences", "set", "matlab", "-1", "--db", url]).exit_code != 0
    assert run.invoke(app, ["licences", "unset", "nope", "--db", url]).exit_code == 2
    assert run.invoke(app, ["licences", "unset", "matlab", "--db", url]).exit_code == 0
    assert store.licences() == {}
    store.close()


def test_sites_toml_licences(tmp_path: Path) -> None:
    cfg = tmp_path / "sites.toml"
    cfg.write_text('[licences]\nmatlab = 4\nansys = 0\n\n[sites.A]\nadapter = "local"\nlicences = { matlab = 2 }\n')
    assert load_licences(cfg) == {"matlab": 4, "ansys": 0}
    assert load_licences(None) == {}
    cfg.write_text('[licences]\nmatlab = "four"\n')
    with pytest.raises(StoreError, match=r"\[licences\] must map"):
        load_licences(cfg)
    cfg.write_text("[licences]\nmatlab = -2\n")
    with pytest.raises(StoreError, match="matlab"):
        load_licences(cfg)
