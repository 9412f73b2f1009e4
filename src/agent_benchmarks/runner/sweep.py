"""A sweep file: a grid of runs (suite x stack x model x prompt), each an ordinary run folder.

A sweep file is TOML (read with the standard library's ``tomllib``)::

    name = "stacks"                  # default: the file's name without .toml
    out_dir = "results/sweeps/stacks"  # default: results/sweeps/<name>
    executor = "local"               # or "ray" (ray_address = "ray://...": a cluster)
    workers = 4                      # attempts at once, over every cell

    [grid]
    suite = ["localweb"]
    stack = ["native", "mcp:lightpanda", "mcp:agent-browser", "chat:lightpanda"]
    model = ["scripted", "anthropic/claude-sonnet-4-5"]
    prompt = ["default"]             # optional: --prompt of each cell
    repeat = 3                       # --repeat of every cell

    [settings]                       # flags of every cell, named by their dest
    timeout = 120

    [suites.gaia]                    # flags of one suite's cells
    level = 1

    [stacks."mcp:agent-browser"]     # flags of one stack's cells
    surface = "upstream"

    [stacks."mcp:playwright@codex"]  # models = ...: this stack's models, not the grid's
    models = ["openai/gpt-5.2"]

A stack is a runner kind, with its variant after a colon when the runner has one
(``mcp:<server>`` is ``--backend <server>``, ``chat:<engine>`` is ``--engine <engine>``),
and the agent after an ``@`` for a runner that has a choice of agent (``mcp:playwright@codex``
is ``--backend playwright --agent codex``; without it, the runner's default, Claude Code).
A stack's ``models`` replace the grid's models for its cells: an agent runs its own
provider's models (Claude Code Anthropic's, Codex OpenAI's), so a grid of both agents names
each agent's models on its stacks. A
model is ``provider/model`` (``--provider`` and ``--model``, or agent-browser chat's joined
``--model provider/model``), a bare model id (``--model``), or ``scripted[:NAME]`` for a
suite that plays the model itself (localweb's oracle; ``--scripted-model NAME``). Flag
values: ``true`` gives the flag alone, ``false`` leaves it out (``no_grade = true`` turns a
default-on flag off), a list gives the flag once per item; anything else is the flag's value.

Each cell is one command line with its own folder (``<out_dir>/<suite>/<stack>/<model>
[/<prompt>]``), so each is resumable alone with its own ``*-run --resume``. Relative paths
are relative to the directory the sweep runs from, as every run command's are.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.storage import PredictionsStream, write_json_atomic
from agent_benchmarks.spec.suites import backend_kinds, get_backend, get_suite, suite_names

SWEEP_RECORD_VERSION = 1
SCRIPTED = "scripted"
MODELS = "models"  # in a stack's table: its models, replacing the grid's

FlagValue = str | int | float | bool | list[str | int | float]
Flags = dict[str, FlagValue]
CellState = Literal["new", "started", "done"]


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: list[str] = Field(min_length=1)
    stack: list[str] = Field(min_length=1)
    model: list[str] = Field(min_length=1)
    prompt: list[str] | None = Field(None, min_length=1)
    repeat: int = Field(1, ge=1)

    @field_validator("suite", "stack", "model", "prompt", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("suite", "stack", "model", "prompt")
    @classmethod
    def _no_repeats(cls, values: list[str] | None) -> list[str] | None:
        if values is not None and len(set(values)) != len(values):
            raise ValueError(f"a value is listed twice: {values}")
        return values


class SweepFile(BaseModel):
    """What a sweep file holds."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    out_dir: Path | None = None
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    workers: int = Field(1, ge=1)
    grid: Grid
    settings: Flags = Field(default_factory=dict)
    suites: dict[str, Flags] = Field(default_factory=dict)
    stacks: dict[str, Flags] = Field(default_factory=dict)


# Flags a cell's place in the grid sets; the sweep's own settings would contradict it.
_GRID_FLAGS = {
    "provider",
    "model",
    "scripted_model",
    "prompt",
    "repeat",
    "out_dir",
    "resume",
    "workers",
    "executor",
    "ray_address",
}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "-"


def _flag_argv(flags: Flags) -> list[str]:
    argv: list[str] = []
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            continue
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


@dataclass(frozen=True)
class Stack:
    """One stack of the grid: a runner kind and its variant."""

    text: str
    kind: str
    variant_flag: str | None
    variant: str | None
    model_form: str
    agent: str | None = None

    @classmethod
    def parse(cls, text: str) -> Stack:
        named, _, agent = text.partition("@")
        kind, _, variant = named.partition(":")
        if kind not in backend_kinds():
            raise InputError(
                f"stack {text!r}: no runner {kind!r} (runners: {', '.join(backend_kinds())})"
            )
        definition = get_backend(kind)
        if variant and definition.variant is None:
            raise InputError(f"stack {text!r}: the {kind} runner has no variant to pick")
        flag = definition.variant
        field_info = definition.options.model_fields[flag] if flag else None
        if not variant and field_info is not None and field_info.is_required():
            choices = (field_info.json_schema_extra or {}).get("choices")  # type: ignore[union-attr]
            raise InputError(
                f"stack {text!r}: the {kind} runner needs its {flag}, as in {kind}:NAME"
                + (f" ({', '.join(choices)})" if choices else "")
            )
        if agent:
            agents = definition.options.model_fields.get("agent")
            choices = (agents.json_schema_extra or {}).get("choices") if agents else None  # type: ignore[union-attr]
            if not choices or agent not in choices:
                which = f"agents: {', '.join(choices)}" if choices else "no choice of agent"
                raise InputError(f"stack {text!r}: the {kind} runner has {which}")
        return cls(
            text, kind, definition.variant, variant or None, definition.model_form, agent or None
        )

    def argv(self) -> list[str]:
        argv = ["--agent", self.agent] if self.agent else []
        if self.variant is None or self.variant_flag is None:
            return argv
        return ["--" + self.variant_flag.replace("_", "-"), self.variant, *argv]


def _model_argv(model: str, stack: Stack) -> list[str]:
    name, _, scripted_name = model.partition(":")
    if name == SCRIPTED:
        return ["--scripted-model", scripted_name] if scripted_name else []
    provider, slash, model_id = model.partition("/")
    if not slash:
        return ["--model", model]
    if not provider or not model_id:
        raise InputError(f"model {model!r}: expected provider/model, a model id, or scripted")
    if stack.model_form == "joined":
        return ["--model", model]
    return ["--provider", provider, "--model", model_id]


@dataclass(frozen=True)
class Cell:
    """One run of the sweep: a command line and its run folder."""

    suite: str
    stack: Stack
    model: str
    prompt: str | None
    out_dir: Path
    flags: list[str] = field(default_factory=list)

    @property
    def runner(self) -> str:
        return self.stack.kind

    @property
    def label(self) -> str:
        parts = [self.suite, self.stack.text, self.model]
        return " · ".join(parts + ([self.prompt] if self.prompt else []))

    def run_argv(self) -> list[str]:
        """The run command's arguments: ``--resume`` when the cell was started."""
        argv = [*self.flags, "--out-dir", str(self.out_dir)]
        return [*argv, "--resume"] if self.state() == "started" else argv

    def command(self) -> str:
        prog = f"{self.suite}{get_backend(self.runner).prog_suffix}"
        return " ".join([prog, *self.run_argv()])

    def state(self) -> CellState:
        """``new`` (no run yet), ``done`` (every attempt settled, and graded unless the
        cell says ``--no-grade``), or ``started`` (anything else: interrupted,
        infrastructure failures to retry, not graded)."""
        if not (self.out_dir / "manifest.json").exists():
            return "new"
        from agent_benchmarks.runner.plan import plan_attempts
        from agent_benchmarks.scoring.scorecard import read_manifest

        try:
            manifest = read_manifest(self.out_dir)
        except InputError:
            return "started"  # its resume names what is wrong with the folder
        graded = (self.out_dir / "scores.json").exists() or "--no-grade" in self.flags
        if manifest is None or not graded:
            return "started"
        predictions = self.out_dir / "predictions.jsonl"
        rows = PredictionsStream(predictions) if predictions.exists() else []
        # What a resume would run: attempts with no row, or whose last row is an
        # infrastructure failure.
        return "started" if plan_attempts(manifest.task_ids, manifest.repeat, rows).todo else "done"


@dataclass
class Sweep:
    """A loaded sweep file."""

    path: Path
    file: SweepFile
    digest: str

    @property
    def name(self) -> str:
        return self.file.name or self.path.stem

    @property
    def out_dir(self) -> Path:
        return self.file.out_dir or Path("results") / "sweeps" / self.name

    @property
    def workers(self) -> int:
        return self.file.workers

    @property
    def executor(self) -> Literal["local", "ray"]:
        return self.file.executor

    @property
    def ray_address(self) -> str | None:
        return self.file.ray_address

    def cells(self) -> list[Cell]:
        """Every cell of the grid, suite-major, in the file's order."""
        grid = self.file.grid
        stacks = [Stack.parse(text) for text in grid.stack]
        prompts: list[str | None] = list(grid.prompt) if grid.prompt else [None]
        cells = []
        pairs = [(stack, model) for stack in stacks for model in self.models_of(stack.text)]
        for suite, (stack, model), prompt in itertools.product(grid.suite, pairs, prompts):
            # The more specific table wins: a suite's, then a stack's, over the shared ones.
            own = {k: v for k, v in self.file.stacks.get(stack.text, {}).items() if k != MODELS}
            shared = self.file.settings | self.file.suites.get(suite, {}) | own
            flags = (
                _flag_argv(shared)
                + stack.argv()
                + _model_argv(model, stack)
                + (["--prompt", prompt] if prompt else [])
                + (["--repeat", str(grid.repeat)] if grid.repeat > 1 else [])
            )
            folder = self.out_dir / suite / _slug(stack.text) / _slug(model)
            if prompt:
                folder /= _slug(prompt)
            cells.append(Cell(suite, stack, model, prompt, folder, flags))
        return cells

    def models_of(self, stack: str) -> list[str]:
        """The models of a stack's cells: its own ``models``, else the grid's."""
        own = self.file.stacks.get(stack, {}).get(MODELS)
        if own is None:
            return list(self.file.grid.model)
        return [str(m) for m in own] if isinstance(own, list) else [str(own)]

    def listing(self) -> str:
        """The cells, their states and command lines (``sweep --list``)."""
        lines = []
        for cell in self.cells():
            lines.append(f"[{cell.state()}] {cell.label}\n    {cell.command()}")
        return "\n".join(lines)

    def write_record(self, cells: list[Cell]) -> Path:
        """``sweep.json`` in the sweep's folder: the file as read, its hash, and each cell's
        folder and command line."""
        record = SweepRecord(
            name=self.name,
            file=str(self.path),
            file_sha256=self.digest,
            sweep=self.file.model_dump(mode="json"),
            cells=[
                SweepCellRecord(
                    label=cell.label,
                    suite=cell.suite,
                    stack=cell.stack.text,
                    model=cell.model,
                    prompt=cell.prompt,
                    out_dir=str(cell.out_dir),
                    argv=[*cell.flags, "--out-dir", str(cell.out_dir)],
                )
                for cell in cells
            ],
        )
        path = self.out_dir / "sweep.json"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, record.model_dump_json(indent=2))
        return path


class SweepCellRecord(BaseModel):
    label: str
    suite: str
    stack: str
    model: str
    prompt: str | None
    out_dir: str
    argv: list[str]  # the run command's arguments (with --resume when a cell is resumed)


class SweepRecord(BaseModel):
    """``sweep.json``: what a sweep ran, beside its cells' run folders."""

    sweep_record_version: int = SWEEP_RECORD_VERSION
    name: str
    file: str
    file_sha256: str
    sweep: dict[str, Any]
    cells: list[SweepCellRecord]


def load_sweep(path: Path) -> Sweep:
    """Read and check a sweep file; one :class:`InputError` naming the file and what is
    wrong in it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the sweep file ({exc.strerror})") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a TOML file: {exc}") from None
    try:
        file = SweepFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise InputError(f"{path}: {where}: {first['msg']}") from None
    sweep = Sweep(path, file, hashlib.sha256(data).hexdigest())
    _check(sweep)
    return sweep


def _check(sweep: Sweep) -> None:
    file = sweep.file
    where = sweep.path
    known = suite_names()
    for suite in [*file.grid.suite, *file.suites]:
        if suite not in known:
            raise InputError(f"{where}: suite {suite!r}: no such suite ({', '.join(known)})")
    tables = [("settings", file.settings)]
    tables += [(f"suites.{k}", v) for k, v in file.suites.items()]
    tables += [(f"stacks.{k!r}", v) for k, v in file.stacks.items()]
    for table, flags in tables:
        for name in flags:
            if name in _GRID_FLAGS:
                raise InputError(f"{where}: {table}.{name}: set by the grid or the sweep")
    for text in file.stacks:
        if text not in file.grid.stack:
            raise InputError(f"{where}: stacks.{text!r}: not a stack of the grid")
    models = {m for text in file.grid.stack for m in sweep.models_of(text)}
    for model in sorted(models):
        if model.partition(":")[0] == SCRIPTED:
            lacking = [s for s in file.grid.suite if get_suite(s).scripted_model is None]
            if lacking:
                raise InputError(
                    f"{where}: model {model!r}: {', '.join(lacking)} cannot play a scripted "
                    "model (only a suite with its own oracle, such as localweb, can)"
                )
    try:
        sweep.cells()  # names a bad stack or model
    except InputError as exc:
        raise InputError(f"{where}: grid: {exc}") from None
