"""What a suite declares, and the registry that finds suites and backends by name.

A suite is a package ``agent_benchmarks.<name>`` (or any package) exposing a
:class:`SuiteDef`, registered under ``[project.entry-points."agent_benchmarks.suites"]``
in pyproject.toml; a backend family likewise under ``agent_benchmarks.backends`` (its
:class:`~agent_benchmarks.backends.base.BackendDef`). Adding either is that module and its
entry-point line (plus its console scripts): nothing else in the tree names it.

What a suite runs with beyond its data (its grader, a session with run-scoped services, its
own options) is named as ``"module:attribute"`` and loaded on use, so that reading a
suite's definition (to list tasks, to check a row's id) imports none of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.datasets import DatasetSpec, LoadedDataset
from agent_benchmarks.spec.prompts import SuitePrompt
from agent_benchmarks.spec.run_spec import NoOptions, Options

SUITES_GROUP = "agent_benchmarks.suites"
BACKENDS_GROUP = "agent_benchmarks.backends"


@dataclass(frozen=True)
class SuiteDef:
    name: str
    title: str
    dataset: DatasetSpec | None  # None: the suite bundles its own tasks (localweb)
    # "module:factory" of its grader: factory(options, predictions_path) -> Grader.
    grader: str = ""
    # "module:Class" of the grader's own Options (WebBench: the judge's), if any.
    grading_options: str | None = None
    # Suite-specific selection flags the CLI offers: "level", "skip_attachments", "site".
    selection_flags: tuple[str, ...] = ()
    # For a suite that bundles its tasks: returns them with their provenance.
    bundled: Callable[[], LoadedDataset] | None = None
    # What the agent is told, and how its reply becomes a prediction.
    prompt: SuitePrompt | None = None
    # URL patterns that would hand the agent the answer (dataset copies, leaderboards);
    # ``--block-answer-sources`` blocks them, plus any URL holding the task's id.
    answer_sources: tuple[str, ...] = ()
    default_timeout_s: float = 1800.0
    # An empty answer (no timeout, no safety refusal) is retried once within the attempt,
    # on runners that support it (upstream's GAIA native method; --no-empty-retry).
    retry_empty_once: bool = False
    # A suite with run-scoped services (localweb's site and scripted model): "module:func"
    # of its session factory (runner.session.SessionFactory), and of its own Options.
    session: str | None = None
    options: str | None = None
    # The suite can play the model itself under this name (localweb's scripted oracle),
    # when a run names no provider.
    scripted_model: str | None = None
    # "module:func" serving the suite's site alone (``<suite>-run --serve``), if it has one.
    serve: str | None = None
    # "module:func" preparing a task's attached file for the agent (GAIA's office files to
    # text): func(path, workdir) -> a pydantic plan (the row records its dump), whose
    # ``attached_path`` is the file an agent is given, if any.
    attachments: str | None = None
    # "module:func" refusing, before a run starts, what the suite cannot run on the built
    # backend: func(spec, backend) raises InputError (localweb: a fault the stack cannot take).
    check: str | None = None


def load_ref(ref: str) -> Any:
    """The attribute a ``"module:attribute"`` reference names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


@cache
def _registered(group: str) -> dict[str, Any]:
    return {point.name: point for point in entry_points(group=group)}


def suite_names() -> tuple[str, ...]:
    """The registered suites, in name order."""
    return tuple(sorted(_registered(SUITES_GROUP)))


def get_suite(name: str) -> SuiteDef:
    points = _registered(SUITES_GROUP)
    if name not in points:
        raise KeyError(name)
    return points[name].load()


def suite_def(name: str) -> SuiteDef:
    """The registered suite ``name``; an unknown name is the user's input error."""
    try:
        return get_suite(name)
    except KeyError:
        raise InputError(f"no suite {name!r} is registered") from None


def suite_options(suite: SuiteDef) -> type[Options]:
    """The suite's own run options (localweb's faults), or none."""
    return load_ref(suite.options) if suite.options else NoOptions


def grading_options(suite: SuiteDef) -> type[Options]:
    """The options its grader takes (WebBench's judge), or none."""
    return load_ref(suite.grading_options) if suite.grading_options else NoOptions


def backend_kinds() -> tuple[str, ...]:
    """The registered backend families ("native", "mcp", "chat", ...), in name order."""
    return tuple(sorted(_registered(BACKENDS_GROUP)))


def backend_def(kind: str) -> Any:
    """:func:`get_backend`, an unknown kind being the user's input error."""
    try:
        return get_backend(kind)
    except KeyError:
        raise InputError(f"no backend {kind!r} is registered") from None


def get_backend(kind: str) -> Any:
    """The :class:`~agent_benchmarks.backends.base.BackendDef` registered as ``kind``
    (imports that backend's module, and only it)."""
    points = _registered(BACKENDS_GROUP)
    if kind not in points:
        raise KeyError(kind)
    return points[kind].load()
