"""The pydantic model of a workflow entry and of ``metasched submit``'s options, built from the field
checks of :data:`metasched.runtime.metaqueue.workflow.FIELD_PARSERS` (one description: the model, the
submit options and the JSON Schema apply the same checks). Imported only by the commands that read
workflow files or print the schema (pydantic costs ~0.2 s to load)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.workflow import (
    FIELD_PARSERS as P,
)
from metasched.runtime.metaqueue.workflow import (
    MAX_ATTEMPTS,
    MAX_INT,
    MAX_SECONDS,
    MAX_TASKS,
    SUBMIT_OPTIONS,
    _short,
)

__all__ = ["ENTRIES", "SubmitOptions", "WorkflowEntry", "format_errors", "workflow_json_schema"]


def _check(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A pydantic before-validator from a parser raising StoreError (its message becomes the error's)."""

    def validate(value: Any) -> Any:
        try:
            return fn(value)
        except StoreError as exc:
            raise ValueError(str(exc)) from None

    return validate


_DURATION_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
        {"type": "string", "description": "90, 90s, 10m, 2h, 1d or H:MM:SS"},
    ]
}
_NAME_SCHEMA = {"type": "string", "minLength": 1, "not": {"pattern": "^[0-9]+$"}}

Name = Annotated[str, BeforeValidator(_check(P["name"])), WithJsonSchema(_NAME_SCHEMA)]
Command = Annotated[str, BeforeValidator(_check(P["command"])), WithJsonSchema({"type": "string", "minLength": 1})]
After = Annotated[
    list[str],
    BeforeValidator(_check(P["after"])),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]
Cpus = Annotated[
    int,
    BeforeValidator(_check(P["cpus"])),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_INT}),
]
Tasks = Annotated[
    int,
    BeforeValidator(_check(P["tasks"])),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_TASKS}),
]
Nodes = Annotated[
    int,
    BeforeValidator(_check(P["nodes"])),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_TASKS}),
]
MemMb = Annotated[
    int,
    BeforeValidator(_check(P["mem"])),
    WithJsonSchema(
        {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "description": "512M, 4G, 1T, 2048k"}]}
    ),
]
_WALLTIME_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "description": "minutes, as in Slurm"},
        {"type": "string", "description": "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (sbatch --time), 90s, 2h"},
    ]
}
Seconds = Annotated[float, BeforeValidator(_check(P["time"])), WithJsonSchema(_WALLTIME_SCHEMA)]
Deadline = Annotated[float | None, BeforeValidator(_check(P["deadline"])), WithJsonSchema(_DURATION_SCHEMA)]
Licences = Annotated[
    dict[str, int],
    BeforeValidator(_check(P["licences"])),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
                {"type": "array", "items": {"type": "string", "minLength": 1}},
                {"type": "string", "description": "a,b:2"},
            ]
        }
    ),
]
Env = Annotated[
    dict[str, str],
    BeforeValidator(_check(P["env"])),
    WithJsonSchema({"type": "object", "additionalProperties": {"type": ["string", "number"]}}),
]
Attempts = Annotated[
    int,
    BeforeValidator(_check(P["max_attempts"])),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_ATTEMPTS}),
]
UserClass = Annotated[
    str, BeforeValidator(_check(P["user_class"])), WithJsonSchema({"enum": ["gold", "silver", "regular"]})
]
Params = Annotated[
    dict[str, float],
    BeforeValidator(_check(P["params"])),
    WithJsonSchema({"type": "object", "additionalProperties": {"type": "number"}}),
]
Cwd = Annotated[str | None, BeforeValidator(_check(P["cwd"]))]


class _JobFields(BaseModel):
    """The fields a job has however it is submitted (a workflow entry, ``metasched submit``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: After = Field(default_factory=list, description="Names (or quoted ids) this job waits for.")
    cpus: Cpus = Field(1, description="CPUs the job needs (per task for a parallel job).")
    tasks: Tasks = Field(1, description="MPI ranks, started by the site's launcher (srun, mpirun); default 1.")
    nodes: Nodes = Field(1, description="Nodes the tasks are spread over (at most one per task); default 1.")
    mem: MemMb = Field(0, description="Memory in MB (a number) or with a unit: 512M, 4G.")
    time: Seconds = Field(
        0.0, description="Wall-time estimate as sbatch --time: minutes (a bare number), MM:SS, HH:MM:SS, D-HH:MM:SS."
    )
    licences: Licences = Field(default_factory=dict, description="{name: count}, a list of names, or 'a,b:2'.")
    max_attempts: Attempts = Field(3, description="Runs allowed when placeholders vanish.")
    deadline: Deadline = Field(None, description="Wanted done within this long of submission (> 0).")
    user_class: UserClass = Field("regular", description="gold, silver or regular.")
    params: Params = Field(default_factory=dict, description="{name: number} for the kind's run-time formula.")


class WorkflowEntry(_JobFields):
    """One job of a workflow file."""

    name: Name = Field(description="Unique job name (not all digits: digits mean job ids).")
    command: Command = Field(description="Shell command line (quote it when YAML would read a number or boolean).")
    cwd: Cwd = Field(None, description="Working directory (default: where you submit from).")
    env: Env = Field(default_factory=dict, description="Extra environment variables.")
    inputs: Any = Field(None, description="Files staged in before the job (remote sites).")
    outputs: Any = Field(None, description="Files staged out after the job (remote sites).")

    @model_validator(mode="before")
    @classmethod
    def _licenses_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict) and "licenses" in data:
            if "licences" in data:
                raise ValueError("give licences or licenses, not both")
            data = {("licences" if k == "licenses" else k): v for k, v in data.items()}
        return data


class SubmitOptions(_JobFields):
    """The options of ``metasched submit`` (the same checks as a workflow entry)."""

    name: Name | None = None


ENTRIES: TypeAdapter[list[WorkflowEntry]] = TypeAdapter(list[WorkflowEntry])


def workflow_json_schema() -> dict[str, Any]:
    """JSON Schema of a workflow file: a list of entries, or a mapping ``{jobs: [...]}``."""
    entries = ENTRIES.json_schema()
    defs = entries.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "metasched workflow file",
        "description": "metasched submit-workflow: a YAML list of jobs (or {jobs: [...]}).",
        "anyOf": [
            entries,
            {"type": "object", "properties": {"jobs": entries}, "required": ["jobs"], "additionalProperties": False},
        ],
        "$defs": defs,
    }


def _path_of(loc: Sequence[int | str], prefix: str) -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _option_name(field: str) -> str:
    return SUBMIT_OPTIONS.get(field, "--" + field.replace("_", "-"))


def format_errors(exc: ValidationError, prefix: str, *, option: bool = False) -> str:
    """One line naming each error's place (``jobs[3].cpus: ...``; ``--cpus: ...`` for options)."""
    parts = []
    for err in exc.errors()[:3]:
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        where = _path_of(loc, prefix) if not option else (_option_name(str(loc[0])) if loc else "options")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key; known: {', '.join(sorted(WorkflowEntry.model_fields))}"
        elif err["type"] == "missing":
            msg = "missing (every job needs name and command)"
        elif err["type"] in ("model_type", "dict_type"):
            msg = f"expected a mapping with name and command, got {_short(err.get('input'))}"
        elif err["type"] == "list_type":
            msg = f"expected a list of jobs, got {_short(err.get('input'))}"
        parts.append(f"{where}: {msg}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
