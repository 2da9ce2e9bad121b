"""The one platform description: TOML and Python give the same sites; bad keys get one error naming them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from metasched.model.platform import Platform, PlatformError, SiteSpec
from metasched.model.platform_file import json_schema, load_preset, platform_from_dict, preset_names
from metasched.model.site import Site

REPO = Path(__file__).resolve().parents[2]

GOOD = """
[platform]
name = "three"
kinds = ["bt", "lu"]

[sites.alpha]
procs = 128
speed = 1.0
scheduler = "easy"
licences = { matlab = 2 }
adapter = "slurm"
queue = "batch"
wall_time = "2h"
setup = ["module load x"]

[sites.beta]
machines = [32, 32]
speed = { default = 1.5, bt = 1.2 }
scheduler = "conservative"
order = "efficacy"
"""


def test_toml_and_python_describe_the_same_platform(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text(GOOD)
    plat = Platform.from_toml(path)
    assert plat.name == "three" and plat.names == ["alpha", "beta"] and plat.kinds == ("bt", "lu")
    alpha, beta = plat.sites
    assert alpha == SiteSpec(
        name="alpha",
        procs=128,
        licences={"matlab": 2},
        live={
            "adapter": "slurm",
            "queue": "batch",
            "wall_time": "2h",
            "setup": ["module load x"],
            "licences": {"matlab": 2},
        },
    )
    assert beta.procs == 64 and beta.machines == (32, 32) and beta.factor("bt") == 1.2 and beta.factor("lu") == 1.5
    assert beta.scheduler == "conservative" and beta.order == "efficacy"
    # the simulator's Site: kind "bt" is application class 0, others at the default factor
    assert plat.to_sites() == [Site("alpha", 128), Site("beta", 64, speed={0: 1.2}, default_speed=1.5)]


@pytest.mark.parametrize(
    ("sites", "key", "words"),
    [
        ({"a": {"procs": -4}}, "sites.a.procs", "greater than 0"),
        ({"a": {"procs": 0}}, "sites.a.procs", "greater than 0"),
        ({"a": {"procs": 4, "speed": 0}}, "sites.a.speed", "positive"),
        ({"a": {"procs": 4, "speed": {"bt": 0.0}}}, "sites.a.speed.bt", "positive"),
        ({"a": {"procs": 4, "procz": 1}}, "sites.a.procz", "unknown key 'procz'"),
        ({"a": {"procs": 4, "scheduler": "sjf"}}, "sites.a.scheduler", "unknown local scheduler"),
        ({"a": {"procs": 4, "machines": [2, 3]}}, "sites.a.machines", "sum to 5"),
        ({"a": {"speed": 1.0}}, "sites.a.procs", "missing"),
        ({}, "sites", "at least one"),
    ],
)
def test_bad_descriptions_get_one_error_naming_the_key(sites: dict, key: str, words: str) -> None:
    with pytest.raises(PlatformError) as info:
        platform_from_dict({"sites": sites})
    assert info.value.key == key
    assert words in str(info.value) and str(info.value).endswith(f"at {key}")


def test_a_licence_no_site_holds_is_named() -> None:
    with pytest.raises(PlatformError, match=r"no site holds licence 'ansys'.*, at licences\.ansys"):
        platform_from_dict({"sites": {"a": {"procs": 1, "licences": {"matlab": 1}}}, "licences": {"ansys": 2}})
    plat = platform_from_dict({"sites": {"a": {"procs": 1, "licences": {"matlab": 1}}}, "licences": {"matlab": 2}})
    assert plat.licence_names() == ["matlab"]


def test_unknown_top_level_key_is_refused_with_its_path() -> None:
    with pytest.raises(PlatformError, match="unknown key 'sitez', at sitez"):
        platform_from_dict({"sitez": {}, "sites": {"a": {"procs": 1}}})


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[sites.a]\nprocs = 'many'\n")
    with pytest.raises(PlatformError, match=r"bad.toml: sites.a.procs"):
        Platform.from_toml(bad)
    bad.write_text("[sites.a\n")
    with pytest.raises(PlatformError, match="invalid TOML"):
        Platform.from_toml(bad)


def test_every_preset_loads_and_the_published_schema_is_current() -> None:
    names = preset_names()
    assert "sabin2003" in names and "ernemann2002-m64" in names
    for name in names:
        assert load_preset(name).sites
    assert json.loads((REPO / "docs" / "sites.schema.json").read_text()) == json_schema()


def test_ernemann_presets_are_the_machine_configurations() -> None:
    from metasched.model.machines import CONFIGS

    for key, cfg in CONFIGS.items():
        plat = load_preset(f"ernemann2002-{key}")
        assert plat == replace(Platform.from_machine_config(cfg), description=plat.description, source=plat.source)
        assert tuple(s.procs for s in plat.sites) == cfg.sizes
        assert all(s.speed == 1.0 and not s.speeds and s.scheduler == "easy" for s in plat.sites)


def test_from_sites_round_trips_the_simulator_sites() -> None:
    sites = [Site("x", 8, speed={0: 2.0, 2: 0.5}), Site("y", 4, default_speed=1.5)]
    plat = Platform.from_sites(sites, kinds=["a"])
    assert plat.kinds == ("a", "c1", "c2")
    assert plat.to_sites() == [Site("x", 8, speed={0: 2.0, 2: 0.5}), Site("y", 4, default_speed=1.5)]


def test_one_file_runs_live_and_simulated(tmp_path: Path) -> None:
    """`metasched sites run --config` reads the same sites.toml as `simulate --sites`: the live side
    ignores the simulator's keys, and refuses a bad simulation key with its path."""
    from metasched.runtime.manager import load_sites
    from metasched.runtime.metaqueue.store import StoreError

    path = tmp_path / "sites.toml"
    path.write_text(GOOD)
    alpha, beta = load_sites(path)
    assert (alpha.name, alpha.adapter, alpha.queue, alpha.wall_time_s, alpha.licences) == (
        "alpha", "slurm", "batch", 7200.0, {"matlab": 2},
    )  # fmt: skip
    assert (beta.name, beta.adapter) == ("beta", "local")
    path.write_text('[sites.a]\nadapter = "slurm"\nprocs = -1\n')
    with pytest.raises(StoreError, match=r"at sites\.a\.procs"):
        load_sites(path)
    path.write_text('[sites.a]\nadapter = "slurm"\n[sitez]\n')
    with pytest.raises(StoreError, match="unknown key 'sitez'"):
        load_sites(path)


def test_to_toml_round_trips(tmp_path: Path) -> None:
    from metasched.model.platform_file import to_toml

    path = tmp_path / "sites.toml"
    path.write_text(GOOD)
    plat = Platform.from_toml(path)
    (tmp_path / "again.toml").write_text(to_toml(plat))
    assert Platform.from_toml(tmp_path / "again.toml") == plat
    for name in preset_names():
        (tmp_path / "p.toml").write_text(to_toml(load_preset(name)))
        assert Platform.from_toml(tmp_path / "p.toml") == load_preset(name)


def test_sites_become_clusters_of_machines() -> None:
    plat = platform_from_dict(
        {
            "sites": {
                "a": {"machines": [4, 2], "speed": 2.0, "licences": {"ansys": 1}},
                "b": {"procs": 8, "licences": {"matlab": 3}},
            }
        }
    )
    a, b = plat.to_clusters()
    assert [m.cpus for m in a.machines] == [4, 2] and all(m.benchmark == 0.5 for m in a.machines)
    assert a.licence_copies == (1, 0) and b.licence_copies == (0, 3)  # licences: ansys = 0, matlab = 1
    assert all(m.licences == frozenset({0}) for m in a.machines) and b.machines[0].licences == frozenset({1})


def test_live_side_names_an_unknown_site_key_with_its_path(tmp_path: Path) -> None:
    from metasched.runtime.manager import load_sites
    from metasched.runtime.metaqueue.store import StoreError

    path = tmp_path / "sites.toml"
    path.write_text('[sites.a]\nadapter = "slurm"\nprocz = 4\n')
    with pytest.raises(StoreError, match=r"unknown key\(s\) procz.*, at sites\.a\.procz"):
        load_sites(path)
