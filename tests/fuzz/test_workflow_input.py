"""Workflow files and ``submit`` options (issue 33): every case gets a clear, path-named error or a
documented acceptance, never a traceback and never a silent change of what was written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.workflow import read_workflow

# (YAML of one entry's extra fields, the text the error must contain, which names the place)
REFUSED = [
    ("cpus: abc", "jobs[0].cpus"),
    ("cpus: .nan", "jobs[0].cpus"),
    ("cpus: 1.5", "jobs[0].cpus"),
    ("cpus: true", "jobs[0].cpus"),
    ("cpus: 0", "jobs[0].cpus"),
    ("cpus: 99999999999999999999", "jobs[0].cpus"),
    ("env: [1, 2]", "jobs[0].env"),
    ("env: {A: null}", "jobs[0].env"),
    ("env: {A: yes}", "jobs[0].env"),
    ("time: .nan", "jobs[0].time"),
    ("time: .inf", "jobs[0].time"),
    ("time: -5", "jobs[0].time"),
    ("time: '1:-30'", "jobs[0].time"),
    ("time: '1:75'", "jobs[0].time"),
    ("time: 99999999999999999999", "jobs[0].time"),
    ("mem: .nan", "jobs[0].mem"),
    ("mem: 99999999999999999999", "jobs[0].mem"),
    ("mem: [1]", "jobs[0].mem"),
    ("deadline: 0", "jobs[0].deadline"),
    ("deadline: .inf", "jobs[0].deadline"),
    ("licences: {'': 1}", "jobs[0].licences"),
    ("licences: ['']", "jobs[0].licences"),
    ("licences: {matlab: 0}", "jobs[0].licences"),
    ("licences: {matlab: 1.5}", "jobs[0].licences"),
    ("max_attempts: 99999999999999999999", "jobs[0].max_attempts"),
    ("user_class: platinum", "jobs[0].user_class"),
    ("params: {n: .nan}", "jobs[0].params"),
    ("after: [12]", "jobs[0].after"),
    ("colour: red", "jobs[0].colour"),
]


def _wf(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "wf.yaml"
    f.write_text(text)
    return f


@pytest.mark.parametrize(("extra", "where"), REFUSED)
def test_bad_field_is_refused_naming_its_path(tmp_path: Path, extra: str, where: str) -> None:
    f = _wf(tmp_path, f"- name: a\n  command: 'true'\n  {extra}\n")
    with pytest.raises(StoreError) as info:
        read_workflow(f)
    message = str(info.value)
    assert message.startswith(f"{f}:3: ") and where in message  # the line of the bad value
    assert "\n" not in message


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ("{name: a, command: true}", "jobs[0].command"),
        ("{name: a, command: 1234}", "jobs[0].command"),
        ("{name: null, command: x}", "jobs[0].name"),
        ("{name: 12, command: x}", "jobs[0].name"),
        ("{name: '12', command: x}", "jobs[0].name"),
        ("{name: '', command: x}", "jobs[0].name"),
        ("{name: a, command: ''}", "jobs[0].command"),
        ("{name: a}", "jobs[0].command"),
        ("[1, 2]", "jobs[0]"),
    ],
)
def test_names_and_commands_are_text_as_written(tmp_path: Path, entry: str, where: str) -> None:
    f = _wf(tmp_path, f"- {entry}\n")
    with pytest.raises(StoreError, match=re.escape(where)):
        read_workflow(f)


def test_second_entry_is_named_by_index(tmp_path: Path) -> None:
    f = _wf(tmp_path, "- {name: a, command: x}\n- {name: b, command: x}\n- {name: c, command: x, cpus: abc}\n")
    with pytest.raises(StoreError, match=r"wf.yaml:3: jobs\[2\]\.cpus: cpus must be a whole number"):
        read_workflow(f)


def test_documented_acceptances(tmp_path: Path) -> None:
    f = _wf(
        tmp_path,
        "- {name: a, command: 'true', cpus: 2.0, mem: 1.5, time: '1:30', env: {N: 4, X: 0.5}, deadline: 1h}\n",
    )
    (a,) = read_workflow(f)
    assert a.command == "true" and a.cpus == 2 and a.mem_mb == 2  # whole cpus; MB rounded up
    assert a.time_s == 90.0 and a.env == {"N": "4", "X": "0.5"} and a.deadline_s == 3600.0


def test_deadline_zero_is_not_dropped(tmp_path: Path) -> None:
    """``deadline: 0`` was silently dropped (falsy); it is read and refused like ``--deadline 0``."""
    f = _wf(tmp_path, "- {name: a, command: x, deadline: 0}\n")
    with pytest.raises(StoreError, match=r"jobs\[0\]\.deadline: deadline must be > 0"):
        read_workflow(f)


def test_deep_yaml_is_refused(tmp_path: Path) -> None:
    f = _wf(tmp_path, "- name: a\n  command: x\n  env: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(StoreError, match="nest"):
        read_workflow(f)
    f = _wf(tmp_path, "".join("  " * i + "a:\n" for i in range(5000)) + "  " * 5000 + "b\n")
    with pytest.raises(StoreError, match="nest"):
        read_workflow(f)


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append("jobs: [{name: a, command: *a8}]")
    f = _wf(tmp_path, "\n".join(lines) + "\n")
    assert f.stat().st_size < 1000
    with pytest.raises(StoreError, match="alias"):
        read_workflow(f)


def test_modest_aliases_are_accepted(tmp_path: Path) -> None:
    text = "- &base {name: a, command: x, env: &env {A: '1', B: '2'}}\n" + "".join(
        f"- {{name: j{i}, command: x, env: *env}}\n" for i in range(200)
    )
    specs = read_workflow(_wf(tmp_path, text))
    assert len(specs) == 201 and specs[-1].env == {"A": "1", "B": "2"}


@pytest.mark.parametrize(
    "data",
    [b"\x00\x01\x02binary\xff", b"- {name: a, command: \xe9t\xe9}\n", "- {name: a, command: x}\n".encode("utf-16")],
)
def test_binary_and_non_utf8_files(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "wf.yaml"
    f.write_bytes(data)
    with pytest.raises(StoreError, match=rf"{f}: (binary|not UTF-8)"):
        read_workflow(f)


def test_trellis_example_of_the_user_guide_is_accepted(tmp_path: Path) -> None:
    """The guide's own lines (labels of digits only) map to names ``L<label>``, deps alike."""
    f = _wf(
        tmp_path,
        './mqsub.py -l 0022 -c "true"\n./mqsub.py -l 0031 -c "true"\n'
        './mqsub.py -l 3200 -c "Bin/run.it 3 2 0 0 0 0 >& Results/3200.00"\n'
        './mqsub.py -deps "0022 0031" -l 2210 -c "Bin/run.it 2 2 1 0 >& Results/2210"\n',
    )
    specs = read_workflow(f)
    assert [s.name for s in specs] == ["L0022", "L0031", "L3200", "L2210"]
    assert specs[3].after == ["L0022", "L0031"]
    for s in specs:
        s.validate()


def test_json_schema_is_published_and_matches(tmp_path: Path) -> None:
    from metasched.runtime.metaqueue.workflow_model import workflow_json_schema

    schema = workflow_json_schema()
    json.dumps(schema)
    entry = schema["$defs"]["WorkflowEntry"]
    assert set(entry["required"]) == {"name", "command"}
    assert entry["properties"]["cpus"]["minimum"] == 1
    assert entry["additionalProperties"] is False
    shipped = Path(__file__).resolve().parents[2] / "src/metasched/runtime/metaqueue/workflow.schema.json"
    assert json.loads(shipped.read_text()) == schema, "regenerate with: metasched workflow-schema > " + str(shipped)


def test_deep_yaml_is_refused_without_libyaml_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from metasched.runtime.metaqueue import workflow

    monkeypatch.setattr(workflow, "_Loader", yaml.SafeLoader)
    assert workflow._loader() is yaml.SafeLoader
    f = _wf(tmp_path, "- name: a\n  command: x\n  env: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(StoreError, match="nested deeper than 64"):
        read_workflow(f)
    (spec,) = read_workflow(_wf(tmp_path, "- {name: a, command: x, cpus: 2}\n"))
    assert spec.cpus == 2


def test_submit_options_and_the_model_agree() -> None:
    """``metasched submit`` (no pydantic) and the pydantic SubmitOptions apply the same checks."""
    from pydantic import ValidationError

    from metasched.runtime.metaqueue.workflow import submit_spec
    from metasched.runtime.metaqueue.workflow_model import SubmitOptions

    cases: list[dict[str, object]] = [
        {"cpus": 0},
        {"cpus": 2},
        {"time": "1:-30"},
        {"time": "10m"},
        {"licences": [""]},
        {"name": "12"},
        {"deadline": "0"},
        {"mem": "4G"},
        {"params": ["n=nan"]},
        {"user_class": "Gold"},
    ]
    for options in cases:
        try:
            model: object = SubmitOptions.model_validate(options)
        except ValidationError:
            model = None
        try:
            spec: object = submit_spec("true", "/", **options)
        except StoreError:
            spec = None
        assert (model is None) == (spec is None), options


def test_submit_needs_neither_pydantic_nor_yaml() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from metasched.runtime.metaqueue.workflow import submit_spec; submit_spec('true', '/', cpus=2);"
        "print(sorted(m for m in ('pydantic', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
