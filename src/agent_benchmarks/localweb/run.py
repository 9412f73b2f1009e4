"""Console scripts that run the localweb suite against a browser stack.

``localweb-run`` starts the site and, without ``--provider``, the scripted model (each
task's oracle, a test double: the run is labelled ``scaffold``), runs every task with the
Lightpanda agent, grades the contracts and prints the table. With ``--provider`` and a key
it runs a real model on the same site (mode ``live``). ``localweb-run --serve`` starts the
site alone (with any fault knobs) so a user can point any agent at it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import AgentOutcome, Backend, PreparedTask
from agent_benchmarks.cli import entry, non_negative_int, positive_float
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
from agent_benchmarks.runner.command import read_system_prompt, run_command
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession
from agent_benchmarks.suite import SuiteDef

# The model name the scripted server lists; a scaffold run's manifest records it.
SCRIPTED_MODEL = "scripted-oracle"
# Where each client looks for its key (the scripted server takes any).
_KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "gateway": "AI_GATEWAY_API_KEY"}


def add_fault_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("site faults (for stress runs; recorded in the manifest)")
    group.add_argument("--latency-ms", type=non_negative_int, default=0, help="added latency")
    group.add_argument(
        "--error-rate", type=float, default=0.0, help="share of responses that are 5xx (0-1)"
    )
    group.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws")
    group.add_argument(
        "--hang-path",
        action="append",
        default=[],
        metavar="PATH",
        help="site path whose responses hang (repeatable)",
    )
    group.add_argument(
        "--hang-seconds", type=positive_float, default=30.0, help="how long a hang lasts"
    )
    group.add_argument(
        "--late-modal-ms", type=non_negative_int, help="show a modal this long after load"
    )


def faults_from_args(args: argparse.Namespace) -> Faults:
    if not 0.0 <= args.error_rate <= 1.0:
        raise InputError(f"--error-rate must be between 0 and 1, got {args.error_rate}")
    return Faults(
        latency_ms=args.latency_ms,
        error_rate=args.error_rate,
        seed=args.fault_seed,
        hang_paths=frozenset(args.hang_path),
        hang_seconds=args.hang_seconds if args.hang_path else 0.0,
        late_modal_ms=args.late_modal_ms,
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
    suite: SuiteDef,
    args: argparse.Namespace,
    mode: Mode,
    scripted_model: str | None,
    backend: Backend,
) -> Iterator[TaskSession]:
    system_prompt = read_system_prompt(args.system_prompt_file)
    with LocalSite(faults=faults_from_args(args)) as site:
        if scripted_model is None:
            yield LocalwebSession(site, None, mode, system_prompt, backend)
            return
        oracle_surface(backend.name)  # refuse before starting anything
        with ScriptedModelServer(models=[scripted_model]) as server:
            yield LocalwebSession(site, server, mode, system_prompt, backend)


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    add_fault_args(parser)
    serve = parser.add_argument_group("serving the site alone")
    serve.add_argument("--serve", action="store_true", help="serve the site until Ctrl-C")
    serve.add_argument("--host", default="127.0.0.1", help="address to serve on")
    serve.add_argument("--port", type=non_negative_int, default=0, help="port (0: any free)")


# Each command imports its own backend when it runs: none loads the other backends.


@entry
def main(argv: Sequence[str] | None = None) -> int:
    """``localweb-run``: the suite end to end, or the site alone with ``--serve``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--serve" in argv:
        parser = argparse.ArgumentParser(
            prog="localweb-run --serve", description="Serve the localweb site alone."
        )
        add_serve_args(parser)
        args = parser.parse_args(argv)
        serve_forever(args.host, args.port, faults_from_args(args))
        return 0
    from agent_benchmarks.backends import lightpanda

    return run_command(
        SUITE,
        lightpanda.CLI,
        session_factory=localweb_session,
        add_suite_args=add_serve_args,
        scripted_model=SCRIPTED_MODEL,
    )(argv)


@entry
def mcp_main(argv: Sequence[str] | None = None) -> int:
    """``localweb-mcp-run --backend B``: Claude Code on one browser MCP server; without
    ``--provider``/``--base-url`` the oracle plays Claude's model."""
    from agent_benchmarks.backends import claude_mcp

    return run_command(
        SUITE,
        claude_mcp.CLI,
        session_factory=localweb_session,
        add_suite_args=add_fault_args,
        scripted_model=SCRIPTED_MODEL,
    )(argv)


@entry
def ab_main(argv: Sequence[str] | None = None) -> int:
    """``localweb-ab-run [--engine chrome|lightpanda]``: agent-browser's own chat loop; without
    ``--provider``/``--gateway-url`` the oracle plays the model behind a scripted gateway."""
    from agent_benchmarks.backends import agent_browser_chat

    return run_command(
        SUITE,
        agent_browser_chat.CLI,
        session_factory=localweb_session,
        add_suite_args=add_fault_args,
        scripted_model=SCRIPTED_MODEL,
    )(argv)
