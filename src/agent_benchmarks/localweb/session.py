"""The localweb suite's session: its site and, without ``--provider``, its scripted model.

Each run starts the site and, when the suite plays the model itself (each task's oracle, a
test double: the run is labelled ``scaffold``), the scripted model server; with
``--provider`` and a key a real model runs on the same site (mode ``live``).
``localweb-run --serve`` starts the site alone (with any fault knobs) so a user can point
any agent at it (:func:`serve`).
"""

from __future__ import annotations

import base64
import os
import secrets
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import AgentOutcome, Backend, PreparedTask
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import add_secret
from agent_benchmarks.episode.faults import (
    CONNECTION_DROP,
    KINDS,
    LOGIN_WALL,
    RENDERER_CRASH,
    STALE_DOM_WAIT_S,
    EpisodeFault,
    FaultPlan,
    Trigger,
)
from agent_benchmarks.localweb import SUITE
from agent_benchmarks.localweb.models import API_KEY, ScriptedModelServer
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER_CHAT,
    LIGHTPANDA,
    SERVER_SURFACES,
    ToolSurface,
    oracle_policy,
)
from agent_benchmarks.localweb.site import Faults, LocalSite, data, serve_forever
from agent_benchmarks.localweb.tasks import CREDENTIALS, PASSWORD_SLOT, site_record
from agent_benchmarks.records.schema import Fetched, Mode, Task
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession, read_system_prompt
from agent_benchmarks.spec.run_spec import Options, RunSpec, option
from agent_benchmarks.spec.suites import SuiteDef

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
    fault: str | None = option(
        help="a fault injected into each episode at --fault-at: "
        + "; ".join(f"{kind}: {what}" for kind, what in KINDS.items()),
        choices=tuple(KINDS),
        metavar="KIND",
    )
    fault_at: str | None = option(
        help="when the fault fires: call:K (after the agent's K-th tool call) or url:PATTERN "
        "(after the call that first loaded a site path matching PATTERN, * a wildcard), just "
        "before the agent's next model request",
        metavar="WHEN",
    )
    fault_path: str | None = option(
        help="the site path (a pattern) a slow-resource or failing-resource fault hits "
        "(default: every request)",
        metavar="PATH",
    )
    fault_count: int = option(
        1,
        help="how many responses a slow-resource or failing-resource fault hits (default: 1)",
        metavar="N",
        ge=1,
    )
    fault_delay_ms: int = option(
        5000,
        help="how long a slow-resource fault delays each response it hits (default: 5000)",
        metavar="MS",
        ge=0,
    )

    def check(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise InputError(f"--error-rate must be between 0 and 1, got {self.error_rate}")
        self.fault_plan()

    def fault_plan(self) -> FaultPlan | None:
        """The episode fault the options name (None: no --fault)."""
        if self.fault is None:
            for flag, value in (("--fault-at", self.fault_at), ("--fault-path", self.fault_path)):
                if value is not None:
                    raise InputError(f"{flag} goes with --fault KIND")
            return None
        if self.fault_path is not None and self.fault not in _RESOURCE_FAULTS:
            raise InputError(f"--fault-path: for {' and '.join(_RESOURCE_FAULTS)} only")
        trigger = Trigger.parse(self.fault_at) if self.fault_at is not None else None
        params: list[tuple[str, Any]] = []
        if self.fault in _RESOURCE_FAULTS:
            params = [("path", self.fault_path), ("count", self.fault_count)]
            if self.fault == "slow-resource":
                params.append(("delay_ms", self.fault_delay_ms))
        return FaultPlan(self.fault, trigger, tuple(params))

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


_RESOURCE_FAULTS = ("slow-resource", "failing-resource")
# The member account's password comes from here when it is set (a secret: its name ends in
# PASSWORD, so it is masked in everything the harness writes); else each run draws its own.
PASSWORD_ENV = "LOCALWEB_PASSWORD"


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
        fault: FaultPlan | None = None,
        password_source: str = "",
    ):
        super().__init__(SUITE, mode, system_prompt=system_prompt)
        self.site = site
        self.password_source = password_source
        self.fault = fault
        # The run needs the model meter: its faults fire there.
        self.episode_faults = fault is not None
        # Replaying a web archive: the site serves no browser, it re-enacts the requests.
        self.replaying = site.advertised is not None
        self.server = server
        self.protocol = backend.model_protocol
        self.surface = oracle_surface(backend.name) if server is not None else None

    def settings(self) -> dict[str, Any]:
        model = "scripted oracle (test double)" if self.server is not None else "as --provider"
        site: dict[str, Any] = {"faults": self.site.faults.as_dict()}
        if self.fault is not None:
            site["fault_script"] = "every page watches for a stale-dom fault (common.js)"
        if self.site.tls is not None:
            site["https"] = True
        if self.replaying:
            site["replayed"] = (
                "the web archive answers the stack; the site re-enacts each request the "
                "stack sent to it, so its record of the episode is the stack's own"
            )
        account = {
            "username": data.ACCOUNT_USERNAME,
            "password": self.password_source,
            "handed": "in the task's text (logged-in tasks, and every task under --fault "
            "login-wall), masked in everything the harness writes",
        }
        settings = {**super().settings(), "site": site, "model": model, "account": account}
        if self.fault is not None:
            settings["fault"] = self.fault.as_dict()
        return settings

    def prepare(self, task: Task, key: AttemptKey, workdir: Path) -> PreparedTask:
        prepared = super().prepare(task, key, workdir)
        episode = f"{task.id}.a{key.attempt}"
        root = self.site.begin_task(episode)
        start_url = root.rstrip("/") + (task.start_url or "/")
        env: dict[str, str] = {}
        base_url = None
        if self.server is not None and self.surface is not None:
            # A faulted run's oracle, and its clean pair's, recovers as an agent could.
            recover = self.fault is not None
            policy = oracle_policy(task.id, self.surface, root, recover)
            self.server.set_policy(episode, policy)
            base_url = self.server.base_url(episode, self.protocol)
            env[_KEY_VARIABLES.get(self.protocol, "OPENAI_API_KEY")] = API_KEY
        text = self.prompt.task_text(prepared.task, start_url=start_url)
        if self.fault is not None and self.fault.kind == LOGIN_WALL and PASSWORD_SLOT not in text:
            text += f"\nIf the shop asks you to sign in, use {CREDENTIALS}."
        return replace(
            prepared,
            text=text.replace(PASSWORD_SLOT, self.site.account_password),
            env=env,
            base_url=base_url,
            details={**prepared.details, "episode": episode, "start_url": start_url},
            fault=self.episode_fault(episode),
        )

    def episode_fault(self, episode: str) -> EpisodeFault | None:
        """The episode's fault, its site side acting on this episode, watching its URLs."""
        plan = self.fault
        if plan is None:
            return None
        params = dict(plan.params)
        delay_s = params.get("delay_ms", 0) / 1000

        def act(kind: str) -> dict[str, Any]:
            return self.site.interrupt(
                episode,
                kind,
                path=params.get("path"),
                count=params.get("count", 1),
                delay_s=delay_s,
                wait_s=STALE_DOM_WAIT_S,
            )

        fault = EpisodeFault(plan, site=act)
        self.site.watch(episode, fault.page_loaded)
        return fault

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
    fault = options.fault_plan()
    if spec.web == "replay":
        if options.faulty():
            raise InputError(
                "--web replay: the site's fault knobs do not apply (the archive holds the "
                "responses as they were recorded, faults included)"
            )
        advertised = f"{'https' if tls else 'http'}://{host}:{port}"
        port = 0  # the re-enacting site listens elsewhere: the recorded address stays dark
    password, password_source = account_password()
    try:
        site = LocalSite(
            host=host,
            port=port,
            faults=faults,
            tls=tls,
            advertised=advertised,
            fault_script=fault is not None,
            account_password=password,
        )
        site.start()
    except OSError as exc:
        raise InputError(
            f"the localweb site cannot listen on {host}:{port} ({exc.strerror}); pass "
            "another --site-port (and the same one when replaying what it records)"
        ) from None
    with site:
        if scripted_model is None:
            yield LocalwebSession(site, None, mode, system_prompt, backend, fault, password_source)
            return
        oracle_surface(backend.name)  # refuse before starting anything
        with ScriptedModelServer(models=[scripted_model], host=host) as server:
            yield LocalwebSession(
                site, server, mode, system_prompt, backend, fault, password_source
            )


def account_password() -> tuple[str, str]:
    """The member account's password for this run, and where it came from: the
    environment's LOCALWEB_PASSWORD (a replay must sign in with the password it recorded),
    else drawn for this run. Either way it is masked in everything the harness writes."""
    given = os.environ.get(PASSWORD_ENV)
    if given:
        password, source = given, f"from {PASSWORD_ENV}"
    else:
        password, source = secrets.token_hex(12), "drawn for this run, never written"
    add_secret(password)
    return password, source


def check_run(spec: RunSpec, backend: Backend) -> None:
    """The suite's check before a run starts (SuiteDef.check): a fault the stack or the run
    cannot take is refused, naming why."""
    fault = FaultOptions.parse(spec.suite_options, "site faults").fault_plan()
    if fault is not None:
        check_fault_stack(fault, backend, spec)


def check_fault_stack(fault: FaultPlan, backend: Backend, spec: RunSpec) -> None:
    """Refuse a fault the stack or the run cannot take, naming why."""
    flag = f"--fault {fault.kind}"
    meter = getattr(backend, "meter_problem", None)
    problem = meter() if meter is not None else f"{backend.name} has no model endpoint"
    if problem is not None:
        raise InputError(f"{flag}: a fault fires at the harness's model meter: {problem}")
    if spec.executor.kind != "local":
        raise InputError(
            f"{flag}: faults act on the attempt's processes, which must run on this machine "
            "(--executor local)"
        )
    if spec.web == "replay":
        raise InputError(f"{flag}: a replayed web is the archive's, not the live site's")
    mcp = backend.name.partition("/")[0].endswith("-mcp")
    if fault.kind == CONNECTION_DROP and not mcp:
        raise InputError(
            f"{flag}: {backend.name} reaches its browser without an MCP connection the harness "
            "can relay (the native agent runs its browser in its own process; agent-browser's "
            "chat talks to its own daemon); the MCP runners (<suite>-mcp-run) take it"
        )
    if fault.kind == RENDERER_CRASH and "lightpanda" in backend.name:
        raise InputError(
            f"{flag}: {backend.name} runs on Lightpanda, which has no renderer process"
        )


def serve(host: str, port: int, options: FaultOptions) -> None:
    """``localweb-run --serve``: the site alone, with the faults asked, until Ctrl-C."""
    if options.fault is not None:
        # An episode fault fires at the harness's model meter, which a served site has not.
        raise InputError(
            f"--fault {options.fault}: an episode fault fires inside a run (at the agent's "
            "model requests); --serve serves the site alone, with the site's knobs only"
        )
    serve_forever(host, port, options.faults())
