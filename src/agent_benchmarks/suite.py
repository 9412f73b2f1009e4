"""What a suite declares, and the registry that finds a suite's package by name.

Each suite is a package ``agent_benchmarks.<name>`` exposing ``SUITE``; adding a suite is
adding that package (plus its console scripts), nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from agent_benchmarks.datasets import DatasetSpec, LoadedDataset
from agent_benchmarks.prompts import SuitePrompt

SUITE_NAMES = ("gaia", "assistantbench", "webbench", "localweb")


@dataclass(frozen=True)
class SuiteDef:
    name: str
    title: str
    dataset: DatasetSpec | None  # None: the suite bundles its own tasks (localweb)
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


def get_suite(name: str) -> SuiteDef:
    if name not in SUITE_NAMES:
        raise KeyError(name)
    return importlib.import_module(f"agent_benchmarks.{name}").SUITE
