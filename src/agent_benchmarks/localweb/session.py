"""The localweb suite's session: its site and, without ``--provider``, its scripted model.

Each run starts the site and, when the suite plays the model itself (each task's oracle, a
test double: the run is labelled ``scaffold``), the scripted model server; with
``--provider`` and a key a real model runs on the same site (mode ``live``).
``localweb-run --serve`` starts the site alone (with any fault knobs) so a user can point
any agent at it (:func:`serve`).
"""

from __future__ import annotations

import base64
import ssl
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
    AGENT_BROWSER_CHAT,
    LIGHTPANDA,
    SERVER_SURFACES,
    ToolSurface,
    oracle_policy,
)
from agent_benchmarks.localweb.site import Faults, LocalSite, serve_forever
from agent_benchmarks.localweb.tasks import site_record
from agent_benchmarks.records import Fetched, Mode, Task
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession, read_system_prompt
from agent_benchmarks.spec import Options, RunSpec, option
from agent_benchmarks.suite import SuiteDef

# The site's port under --web record|replay: fixed, since the archive is keyed by URL.
RECORDED_SITE_PORT = 8931
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
    site_port: int | None = option(
        help="the site's port (default: any free one; with --web record or replay "
        f"{RECORDED_SITE_PORT}, so that a replay asks for the URLs that were recorded)",
        ge=1,
        le=65535,
    )
    site_tls: str | None = option(
        help="serve the site over HTTPS with this PEM file (its private key and certificate "
        "chain); a stack trusts it only through --web record's proxy",
        metavar="PEM",
    )

    def check(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise InputError(f"--error-rate must be between 0 and 1, got {self.error_rate}")

    def faulty(self) -> bool:
        return self.faults() != Faults()

    def tls_context(self) -> ssl.SSLContext | None:
        if self.site_tls is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.site_tls)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"--site-tls {self.site_tls}: not a PEM file with a private key and "
                f"certificate chain ({exc})"
            ) from None
        return context

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
        # Replaying a web archive: the site serves no browser, it re-enacts the requests.
        self.replaying = site.advertised is not None
        self.server = server
        self.protocol = backend.model_protocol
        self.surface = oracle_surface(backend.name) if server is not None else None

    def settings(self) -> dict[str, Any]:
        model = "scripted oracle (test double)" if self.server is not None else "as --provider"
        site: dict[str, Any] = {"faults": self.site.faults.as_dict()}
        if self.site.tls is not None:
            site["https"] = True
        if self.replaying:
            site["replayed"] = (
                "the web archive answers the stack; the site re-enacts each request the "
                "stack sent to it, so its record of the episode is the stack's own"
            )
        return {**super().settings(), "site": site, "model": model}

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

    def fetched(self, prepared: PreparedTask) -> Fetched | None:
        """The episode's requests in the site's own log: every request the stack sent to
        the site, with the bytes of each response's body. Replaying, the archive answered
        them (the engine counts them at its proxy) and the site only re-enacts them."""
        if self.replaying:
            return None
        requests = self.site.requests_for(prepared.details["episode"])
        return Fetched(
            source="the localweb site's request log",
            requests=len(requests),
            bytes=sum(r.bytes for r in requests),
            pages=sum(1 for r in requests if r.is_page),
        )

    def finish(self, prepared: PreparedTask, outcome: AgentOutcome) -> tuple[str, dict[str, Any]]:
        prediction, details = super().finish(prepared, outcome)
        if self.replaying:
            # The archive answered the agent; the site learns what the agent sent, in order,
            # so the episode's record (and the contracts checked on it) is the agent's own.
            for request in outcome.web_requests:
                self.site.reenact(*reenacted(request))
        record = site_record(self.site, prepared.details["episode"])
        return prediction, {**details, "site": record.model_dump()}


def reenacted(request: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes]:
    """A request of the web proxy's log as :meth:`LocalSite.reenact` takes it."""
    headers = {}
    if request.get("cookie"):
        headers["Cookie"] = request["cookie"]
    if request.get("content_type"):
        headers["Content-Type"] = request["content_type"]
    body = base64.b64decode(request["body"]) if request.get("body") else b""
    return request["method"], request["url"], headers, body


# The surfaces of the browsers with a loop of their own (an MCP server's is its server's,
# whichever agent CLI drives it: claude-mcp/..., codex-mcp/...).
_OWN_LOOP_SURFACES: dict[str, ToolSurface] = {
    "lightpanda-native": LIGHTPANDA,
    "agent-browser-chat/chrome": AGENT_BROWSER_CHAT,
    "agent-browser-chat/lightpanda": AGENT_BROWSER_CHAT,
}


def oracle_surface(backend_name: str) -> ToolSurface:
    """The tool surface the oracle plays on, for a backend; refused where none is mapped."""
    agent, _, server = backend_name.partition("/")
    surface = (
        SERVER_SURFACES.get(server)
        if agent.endswith("-mcp")
        else _OWN_LOOP_SURFACES.get(backend_name)
    )
    if surface is None:
        raise InputError(
            f"the scripted oracle has no tool surface for {backend_name}; "
            "run it with --provider and a real model"
        )
    return surface


@contextmanager
def localweb_session(
    suite: SuiteDef, spec: RunSpec, mode: Mode, scripted_model: str | None, backend: Backend
) -> Iterator[TaskSession]:
    system_prompt = read_system_prompt(spec.system_prompt_file)
    options = FaultOptions.parse(spec.suite_options, "site faults")
    faults = options.faults()
    host = spec.executor.service_host
    port, advertised = options.site_port or 0, None
    if spec.web in ("record", "replay"):
        port = options.site_port or RECORDED_SITE_PORT
    tls = options.tls_context()
    if spec.web == "replay":
        if options.faulty():
            raise InputError(
                "--web replay: the site's fault knobs do not apply (the archive holds the "
                "responses as they were recorded, faults included)"
            )
        advertised = f"{'https' if tls else 'http'}://{host}:{port}"
        port = 0  # the re-enacting site listens elsewhere: the recorded address stays dark
    try:
        site = LocalSite(host=host, port=port, faults=faults, tls=tls, advertised=advertised)
        site.start()
    except OSError as exc:
        raise InputError(
            f"the localweb site cannot listen on {host}:{port} ({exc.strerror}); pass "
            "another --site-port (and the same one when replaying what it records)"
        ) from None
    with site:
        if scripted_model is None:
            yield LocalwebSession(site, None, mode, system_prompt, backend)
            return
        oracle_surface(backend.name)  # refuse before starting anything
        with ScriptedModelServer(models=[scripted_model], host=host) as server:
            yield LocalwebSession(site, server, mode, system_prompt, backend)


def serve(host: str, port: int, options: FaultOptions) -> None:
    """``localweb-run --serve``: the site alone, with the faults asked, until Ctrl-C."""
    serve_forever(host, port, options.faults())
