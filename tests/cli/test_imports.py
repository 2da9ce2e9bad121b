"""Commands import only what they use (issue 34): the lazy command registry of ``cli/main.py``.

Each check runs in a fresh interpreter (``sys.modules`` of this one already holds everything).
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import metasched.cli

HEAVY = ("numpy", "numba", "llvmlite", "matplotlib", "scipy", "sqlalchemy", "fastapi", "uvicorn", "alembic")

# Runs ``metasched ARGS`` in-process, then prints which heavy modules and which of our modules it loaded.
_PROBE = """
import json, sys
args = json.loads(sys.argv[1])
block = set(json.loads(sys.argv[2]))
if block:
    import importlib.abc
    class _Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.partition(".")[0] in block:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, _Block())
code = 0
if args is not None:
    from metasched.cli.main import app
    try:
        app(args, prog_name="metasched")
    except SystemExit as exc:
        code = exc.code
else:
    import metasched.cli.main
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def probe(args: list[str] | None, tmp_path: Path, block: tuple[str, ...] = ()) -> tuple[int, set[str], str]:
    env = {**os.environ, "METASCHED_HOME": str(tmp_path), "COLUMNS": "100"}
    env.pop("METASCHED_DB", None)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args), json.dumps(block)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    *printed, last = out.stdout.strip().splitlines()
    result = json.loads(last)
    return result["code"], set(result["modules"]), "\n".join(printed) + out.stderr


@pytest.mark.parametrize(
    "args",
    [None, ["--help"], ["submit", "--help"], ["status", "--help"], ["sites", "run", "--help"], ["version"]],
    ids=["import", "help", "submit-help", "status-help", "sites-run-help", "version"],
)
def test_light_commands_import_no_heavy_module(args: list[str] | None, tmp_path: Path) -> None:
    code, modules, _ = probe(args, tmp_path)
    assert code in (0, None)
    assert sorted(m for m in HEAVY if m in modules) == []
    assert not any(m.startswith(("metasched.sim", "metasched.report", "metasched.experiments")) for m in modules)


def test_help_lists_every_command_without_loading_its_module(tmp_path: Path) -> None:
    code, modules, _ = probe(["--help"], tmp_path)
    assert code in (0, None)
    ours = {m for m in modules if m.startswith("metasched.cli.")}
    assert ours == {"metasched.cli.main"}


def _help_text(tmp_path: Path, group: list[str], load_all: bool) -> str:
    """``metasched GROUP --help`` as printed with the lazy registry, or after loading every command."""
    code = f"""
import sys
from metasched.cli import main
group = {group!r}
if {load_all!r}:
    import click
    from typer.main import get_command
    root = get_command(main.app)
    ctx = click.Context(root, info_name="metasched")
    node = root
    for name in group:
        node = node.get_command(ctx, name)
        ctx = click.Context(node, info_name=name, parent=ctx)
    # (a lazy group lists its registry lines whatever it has loaded: render the real commands, loaded,
    # in a plain group of the same name and order)
    from typer.core import TyperGroup
    real = {{name: node.get_command(ctx, name) for name in list(node.list_commands(ctx))}}
    plain = TyperGroup(name=node.name, commands=real, help=node.help)
    ctx = click.Context(plain, info_name="metasched" if not group else group[-1], parent=ctx.parent)
    print(plain.get_help(ctx))
else:
    try:
        main.app([*group, "--help"], prog_name="metasched")
    except SystemExit:
        pass
"""
    env = {**os.environ, "METASCHED_HOME": str(tmp_path), "COLUMNS": "100", "TERM": "dumb"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _command_rows(help_text: str) -> list[str]:
    """The rows of the help's command panel (name and one-line help), one string per command."""
    rows: list[str] = []
    inside = False
    for line in help_text.splitlines():
        if line.startswith("╭─ Commands"):
            inside = True
        elif inside and line.startswith("╰"):
            break
        elif inside:
            body = line[1:-1]
            if body[:2].strip():
                rows.append(body.strip())
            else:
                rows[-1] += " " + body.strip()
    return rows


@pytest.mark.parametrize("group", [[], ["experiment"]], ids=["metasched", "experiment"])
def test_registry_help_matches_the_commands_it_stands_for(group: list[str], tmp_path: Path) -> None:
    """The registry's names, order and one-line helps are those of the real commands: a command added,
    renamed or re-documented in its module without its registry line fails here."""
    lazy = _command_rows(_help_text(tmp_path, group, load_all=False))
    loaded = _command_rows(_help_text(tmp_path, group, load_all=True))
    assert lazy, "no command listed"
    assert lazy == loaded


def test_every_cli_module_is_reachable_from_the_registry() -> None:
    """A command module nobody registers would never load: each module of metasched.cli is named by a registry
    line (or is the registry's own)."""
    from metasched.cli.experiment import EXPERIMENTS
    from metasched.cli.main import COMMANDS

    named: set[str] = set()
    for where, _help in [*COMMANDS.values(), *EXPERIMENTS.values()]:
        for module in (where,) if isinstance(where, str) else where:
            named.add(module.partition(":")[0])
    own = {"metasched.cli.main", "metasched.cli.errors", "metasched.cli.launch", "metasched.cli.cmdserver"}
    modules = {f"metasched.cli.{m.name}" for m in pkgutil.iter_modules(metasched.cli.__path__)}
    assert modules - own - named == set()


def test_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    code, _, text = probe(["server"], tmp_path, block=("uvicorn", "fastapi"))
    assert code == 2
    assert text.strip() == (
        "error: metasched server needs the 'server' extra (module uvicorn is not installed): "
        "pip install 'metasched[server]'"
    )


def test_missing_database_driver_names_the_postgres_extra(tmp_path: Path) -> None:
    code, _, text = probe(["status", "--db", "postgresql://nobody@127.0.0.1:1/none"], tmp_path, block=("psycopg",))
    assert code == 2
    assert "pip install 'metasched[postgres]'" in text
    assert "Traceback" not in text


def test_submit_and_status_load_only_the_store(tmp_path: Path) -> None:
    code, modules, _ = probe(["submit", "--", "true"], tmp_path)
    assert code in (0, None)
    code, modules2, text = probe(["status"], tmp_path)
    assert code in (0, None)
    assert "queued=1" in text
    assert "alembic" not in modules2  # the schema is current: no migration machinery on every call
    for mods in (modules, modules2):
        assert sorted(m for m in HEAVY if m in mods and m not in ("sqlalchemy", "alembic")) == []
        assert not any(m.startswith(("metasched.sim", "metasched.report")) for m in mods)


def test_submit_loads_neither_the_orm_nor_rich(tmp_path: Path) -> None:
    """The store is SQLAlchemy Core: no ``sqlalchemy.orm`` (a fifth of the start-up when the tables were ORM
    classes); ``submit`` prints a plain line: no Rich. ``status`` draws its table with Rich, still no ORM."""
    probe(["submit", "--", "true"], tmp_path)  # creates the database: the next calls find it current
    code, modules, _ = probe(["submit", "--", "true"], tmp_path)
    assert code in (0, None)
    assert not any(m == "rich" or m.startswith(("rich.", "sqlalchemy.orm", "yaml")) for m in modules)
    code, modules, _ = probe(["status"], tmp_path)
    assert code in (0, None)
    assert not any(m.startswith(("sqlalchemy.orm", "yaml")) for m in modules)


def test_placeholder_on_fcfs_loads_no_numpy(tmp_path: Path) -> None:
    """A placeholder with the default claim policy (fcfs) on the database starts without the policy registry,
    which pulls NumPy and the meta-policies: it runs one job and leaves when idle."""
    db = f"sqlite:///{tmp_path / 'p.db'}"
    probe(["submit", "--db", db, "--", "true"], tmp_path)
    args = ["placeholder", "--site", "s", "--db", db, "--idle-exit", "0", "--log-dir", str(tmp_path / "logs")]
    code, modules, _ = probe(args, tmp_path)
    assert code in (0, None)
    assert not any(m.startswith(("numpy", "metasched.policy.meta", "metasched.policy.mapping")) for m in modules)
    _, _, text = probe(["status", "--db", db], tmp_path)
    assert "done=1" in text


def test_claim_policy_fast_path_agrees_with_the_registry() -> None:
    from metasched.cli.live import claim_policy
    from metasched.policy.base import lookup
    from metasched.policy.claim import REGISTRY
    from metasched.policy.meta.registry import live_claim_key

    assert type(claim_policy("fcfs")) is lookup(REGISTRY, live_claim_key("fcfs"), "claim policy")
