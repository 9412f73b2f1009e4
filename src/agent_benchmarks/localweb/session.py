"""The localweb suite's session: its site and, without ``--provider``, its scripted model.

Each run starts the site and, when the suite plays the model itself (each task's oracle, a
test double: the run is labelled ``scaffold``), the scripted model server; with
``--provider`` and a key a real model runs on the same site (mode ``live``).
``localweb-run --serve`` starts the site alone (with any fault knobs) so a user can point
any agent at it (:func:`serve`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import AgentOutcome, Backend, PreparedTask
from agent_benchmarks.errors import InputError
from agent_benchmarks.localweb import SUITE
from agent_benchmarks.localweb.models import API_KEY, ScriptedModelServer
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER,
    AGENT_BROWSER_CHAT,
    BROWSER_USE,
    LIGHTPANDA,
    ToolSurface,
    oracle_policy,
)
from agent_benchmarks.localweb.site import Faults, LocalSite, serve_forever
from agent_benchmarks.localweb.tasks import site_record
from agent_benchmarks.records import Mode, Task
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession, read_system_prompt
from agent_benchmarks.spec import Options, RunSpec, option
from agent_benchmarks.suite import SuiteDef

# Where each client looks for its key (the scripted server takes any).
_KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "gateway": "AI_GATEWAY_API_KEY"}


class FaultOptions(Options):
    """The site's faults, for stress runs (recorded in the manifest)."""

    latency_ms: int = option(0, help="added latency", ge=0)
    error_rate: float = option(0.0, help="share of responses that are 5xx (0-1)")
    fault_seed: int = option(0, help="seed of the fault draws")
    hang_path: list[str] = option(
        [], help="site path whose responses hang (repeatable)", metavar="PATH", repeatable=True
    )
    hang_seconds: float = option(30.0, help="how long a hang lasts", gt=0)
    late_modal_ms: int | None = option(help="show a modal this long after load", ge=0)

    def check(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise InputError(f"--error-rate must be between 0 and 1, got {self.error_rate}")

    def faults(self) -> Faults:
        self.check()
        return Faults(
            latency_ms=self.latency_ms,
            error_rate=self.error_rate,
            seed=self.fault_seed,
            hang_paths=frozenset(self.hang_path),
            hang_seconds=self.hang_seconds if self.hang_path else 0.0,
            late_modal_ms=self.late_modal_ms,
        )


class LocalwebSession(TaskSession):
    """Each attempt is an episode on the live site under its own prefix
    (``/t/<task>.a<attempt>/``), so repeats and workers never share a cart; with the
    scripted model, the episode's oracle plays the model at its own URL."""

    def __init__(
        self,
        site: LocalSite,
        server: ScriptedModelServer | None,
        mode: Mode,
        system_prompt: str | None,
        backend: Backend,
    ):
        super().__init__(SUITE, mode, system_prompt=system_prompt)
        self.site = site
        self.server = server
        self.protocol = backend.model_protocol
        self.surface = oracle_surface(backend.name) if server is not None else None

    def settings(self) -> dict[str, Any]:
        model = "scripted oracle (test double)" if self.server is not None else "as --provider"
        return {
            **super().settings(),
            "site": {"faults": self.site.faults.as_dict()},
            "model": model,
        }

    def prepare(self, task: Task, key: AttemptKey, workdir: Path) -> PreparedTask:
        prepared = super().prepare(task, key, workdir)
        episode = f"{task.id}.a{key.attempt}"
        root = self.site.begin_task(episode)
        start_url = root.rstrip("/") + (task.start_url or "/")
        env: dict[str, str] = {}
        base_url = None
        if self.server is not None and self.surface is not None:
            self.server.set_policy(episode, oracle_policy(task.id, self.surface, root))
            base_url = self.server.base_url(episode, self.protocol)
            env[_KEY_VARIABLES.get(self.protocol, "OPENAI_API_KEY")] = API_KEY
        return replace(
            prepared,
            text=self.prompt.task_text(prepared.task, start_url=start_url),
            env=env,
            base_url=base_url,
            details={**prepared.details, "episode": episode, "start_url": start_url},
        )

    def finish(self, prepared: PreparedTask, outcome: AgentOutcome) -> tuple[str, dict[str, Any]]:
        prediction, details = super().finish(prepared, outcome)
        record = site_record(self.site, prepared.details["episode"])
        return prediction, {**details, "site": record.model_dump()}


def oracle_surface(backend_name: str) -> ToolSurface:
    """The tool surface the oracle plays on, for a backend; refused where none is mapped."""
    surfaces = {
        "lightpanda-native": LIGHTPANDA,
        "claude-mcp/lightpanda": LIGHTPANDA,
        "claude-mcp/agent-browser": AGENT_BROWSER,
        "claude-mcp/agent-browser-lightpanda": AGENT_BROWSER,
        "claude-mcp/browser-use": BROWSER_USE,
        "agent-browser-chat/chrome": AGENT_BROWSER_CHAT,
        "agent-browser-chat/lightpanda": AGENT_BROWSER_CHAT,
    }
    if backend_name not in surfaces:
        raise InputError(
            f"the scripted oracle has no tool surface for {backend_name}; "
            "run it with --provider and a real model"
        )
    return surfaces[backend_name]


@contextmanager
def localweb_session(
    suite: SuiteDef, spec: RunSpec, mode: Mode, scripted_model: str | None, backend: Backend
) -> Iterator[TaskSession]:
    system_prompt = read_system_prompt(spec.system_prompt_file)
    faults = FaultOptions.parse(spec.suite_options, "site faults").faults()
    host = spec.executor.service_host
    with LocalSite(host=host, faults=faults) as site:
        if scripted_model is None:
            yield LocalwebSession(site, None, mode, system_prompt, backend)
            return
        oracle_surface(backend.name)  # refuse before starting anything
        with ScriptedModelServer(models=[scripted_model], host=host) as server:
            yield LocalwebSession(site, server, mode, system_prompt, backend)


def serve(host: str, port: int, options: FaultOptions) -> None:
    """``localweb-run --serve``: the site alone, with the faults asked, until Ctrl-C."""
    serve_forever(host, port, options.faults())
