"""The run spec: everything that defines one run, as one typed, serialisable record.

A :class:`RunSpec` is built once, from a command line (:mod:`agent_benchmarks.commands`) or
from a sweep cell, stored in the run's manifest as it is, and handed to the runner. The
runner, the dataset loader and the backends read it; none of them sees a command line.

Fields shared by every run are typed here. What one backend, suite or grader adds is
declared once, by that module, as an :class:`Options` model; the spec holds its values by
field name (``backend``, ``suite_options``, ``grading``) and the module validates them into
its model (:meth:`Options.parse`). The command layer makes each such field a flag, named and
documented by the field itself (:func:`option`).

Field names are the flags' names (``--memory-max-mb`` is ``memory_max_mb``), so a manifest's
``settings.flags`` from before the spec existed maps onto it one to one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_benchmarks.common.errors import InputError

SPEC_VERSION = 1


def option(
    default: Any = None,
    *,
    help: str,
    flag: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
    defines_run: bool = True,
    repeatable: bool = False,
    **constraints: Any,
) -> Any:
    """A field of an :class:`Options` model, with what its command-line flag needs.

    ``flag`` defaults to ``--`` and the field name with dashes; ``choices`` are the values
    the flag takes (a ``Literal`` annotation gives them too); ``defines_run=False`` marks a
    field that does not change what a run measures (a resume may give another value);
    ``repeatable`` makes a list field a flag given once per item. ``constraints`` are
    pydantic's (``ge=1``). A field with no default (``...``) is a required flag."""
    extra: dict[str, Any] = {"flag": flag, "metavar": metavar, "defines_run": defines_run}
    if choices is not None:
        extra["choices"] = list(choices)
    if repeatable:
        extra["repeatable"] = True
    return Field(default, description=help, json_schema_extra=extra, **constraints)


class Options(BaseModel):
    """The fields one backend, suite or grader adds to a run. Mutable: building a backend
    fills in the defaults it resolves (the provider, the search), so that the spec a run
    stores says what it used and a resume keeps it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @classmethod
    def parse(cls, values: dict[str, Any] | None, where: str = "options") -> Self:
        """Validate stored or typed values; one :class:`InputError` naming the field."""
        try:
            return cls.model_validate(values or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            named = cls.flag_of(name) if name in cls.model_fields else name or "?"
            raise InputError(f"{where}: {named}: {first['msg']}") from None

    def check(self) -> None:
        """Refuse values that do not fit together (an :class:`InputError` naming the flag);
        called before a run starts."""

    @classmethod
    def flag_of(cls, name: str) -> str:
        """The command-line flag of one field."""
        extra = cls.model_fields[name].json_schema_extra or {}
        return extra.get("flag") or "--" + name.replace("_", "-")  # type: ignore[union-attr,return-value]

    @classmethod
    def run_defining(cls) -> tuple[str, ...]:
        """The fields a resumed run must keep (all but those marked ``defines_run=False``)."""
        return tuple(
            name
            for name, info in cls.model_fields.items()
            if (info.json_schema_extra or {}).get("defines_run", True)  # type: ignore[union-attr]
        )


class NoOptions(Options):
    """For a backend, suite or grader that adds nothing."""


class SelectionSpec(BaseModel):
    """Which tasks of the dataset: the selection flags."""

    model_config = ConfigDict(extra="forbid")

    task_ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    level: int | None = None  # GAIA; None with a level-1 default set by the command
    skip_attachments: bool = False
    site: str | None = None
    sample_per_site: int | Literal["all"] | None = None
    sample_seed: int = 0

    def recorded(self) -> dict[str, Any]:
        """What the manifest's ``selection`` holds: the fields given, defaults left out."""
        return {k: v for k, v in self.model_dump().items() if v not in (None, False)}


class ExecutorSpec(BaseModel):
    """Where attempts run: this machine's pool, or a Ray cluster (not part of what a run
    measures: a resume may use another executor)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = "local"
    # The cluster's address (ray://..., host:port, or "auto"); None: RAY_ADDRESS, else a
    # local Ray started for the run.
    address: str | None = None
    # Where the run's own services (a suite's site, its scripted model) listen: set when
    # the executor starts, to an address every machine running attempts reaches.
    service_host: str = "127.0.0.1"


# How often an attempt's processes are sampled for memory and CPU unless told otherwise.
DEFAULT_RESOURCE_SAMPLE_MS = 200

# The shared fields that define what a run measures: fixed once a run starts (a resume
# takes them from the manifest; typed again, they must hold the same values).
RUN_FIELDS = (
    "provider",
    "model",
    "timeout",
    "repeat",
    "memory_max_mb",
    "system_prompt_file",
    "prompt",
    "no_empty_retry",
    "block_answer_sources",
    "prices",
    "scaffold",
    "user_agent",
    "scripted_model",
    "web",
    "web_archive",
    "max_steps",
    "max_tokens",
    "max_cost_usd",
    "temperature",
    "resource_sample_ms",
)


class RunSpec(BaseModel):
    """One run, as typed. ``None`` is "not given": the runner resolves the default (the
    runner's timeout, the backend's model) and a resumed run takes the manifest's value."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    spec_version: int = SPEC_VERSION
    suite: str
    # The backend family: "native" (<suite>-run), "mcp" (<suite>-mcp-run), "chat"
    # (<suite>-ab-run), or any backend registered later.
    runner: str

    # What to run on.
    dataset_file: Path | None = None
    split: str | None = None
    revision: str | None = None
    selection: SelectionSpec = Field(default_factory=SelectionSpec)

    # What defines the run (RUN_FIELDS).
    provider: str | None = None
    model: str | None = None
    timeout: float | None = Field(None, gt=0)
    repeat: int | None = Field(None, ge=1)
    memory_max_mb: int | None = Field(None, ge=0)
    system_prompt_file: str | None = None
    prompt: str | None = None
    no_empty_retry: bool | None = None
    block_answer_sources: bool | None = None
    prices: str | None = None
    scaffold: bool | None = None
    user_agent: str | None = None
    # localweb: the name the scripted model answers under (its oracle plays it either way).
    scripted_model: str | None = None
    # The web the stack browses: "live", or "record"/"replay" through the proxy over the
    # WARC archive folder web_archive (absolute); None is live.
    web: Literal["live", "record", "replay"] | None = None
    web_archive: str | None = None
    # The one budget for every agent (episode/budget.py), enforced by the harness's model
    # meter: tool calls, tokens, dollars (the price table's), and the temperature it sets.
    max_steps: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    temperature: float | None = Field(None, ge=0)
    # CA certificate files (absolute) the recording proxy trusts beside the system's (a
    # local site's own test CA): which sites this session records, not what the run is.
    web_trust: list[str] = Field(default_factory=list)
    # How often each attempt's processes are sampled for their memory and CPU, in ms (0:
    # not measured; None: the default, or for a run from before it existed, not measured).
    resource_sample_ms: int | None = Field(None, ge=0)

    # The backend's, the suite's and the grader's own fields, by name (their Options).
    backend: dict[str, Any] = Field(default_factory=dict)
    suite_options: dict[str, Any] = Field(default_factory=dict)
    grading: dict[str, Any] = Field(default_factory=dict)

    # How this invocation runs it (not part of what is measured).
    workers: int = Field(1, ge=1)
    # --workers auto: the pool sized from this machine and the stack's measured peak
    # (runner/autosize.py); ``workers`` then holds the size chosen.
    workers_auto: bool = False
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    grade: bool = True
    out_dir: Path | None = None
    # Continue the run in this folder (the spec's defining fields then come from its
    # manifest, except those in ``typed``, which must agree).
    resume: Path | None = None
    retry_errors: bool = True
    # The fields the user gave (flags typed, sweep keys): the rest may take the manifest's
    # value on a resume, and a grade command later repeats only these grading fields.
    typed: list[str] = Field(default_factory=list)
