"""Faults injected into the browser stack mid-episode, at a point the run names.

A run names one fault (``--fault KIND``) and when it fires (``--fault-at call:K``, after the
agent's K-th tool call, or ``--fault-at url:PATTERN``, once a page matching PATTERN was
first loaded). Either way it fires at the model meter, just before the agent's next model
request: the agent has the result of its last call and is about to decide its next action
on a browser that has just broken. ``--fault none`` is the paired clean run: the same
path (meter, relay, the page's fault script) with nothing fired.

The kinds (:data:`KINDS`) act on three things:

- the stack's processes, found by the attempt's marker (:func:`engine_processes`): the
  engine killed (Lightpanda, or Chromium's browser process), or Chromium's renderers (the
  tab crashes, the browser lives);
- the connection between the agent and its browser server, cut in the project's own relay
  (:mod:`.mcp_relay`), which then, as a reconnecting client would, gives the agent's next
  call a new server and a new browser: the page is gone;
- the site (the suite's own actions, :class:`SiteActions`): the page replacing the nodes the
  agent last read with new ones of the same content, a consent or login wall, the session
  expiring, a resource slow or failing.

Each attempt's :class:`EpisodeFault` records whether and when it fired
(``details.fault``), and what it did.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import attempt_pids
from agent_benchmarks.isolation.resources import proc_stat

NONE = "none"
ENGINE_CRASH = "engine-crash"
RENDERER_CRASH = "renderer-crash"
CONNECTION_DROP = "connection-drop"
STALE_DOM = "stale-dom"
CONSENT_WALL = "consent-wall"
LOGIN_WALL = "login-wall"
SESSION_EXPIRY = "session-expiry"
SLOW_RESOURCE = "slow-resource"
FAILING_RESOURCE = "failing-resource"

KINDS: dict[str, str] = {
    NONE: "nothing fires: the paired clean run, on the same path as the faulted ones",
    ENGINE_CRASH: "the engine's process is killed (Lightpanda, or Chromium's browser process)",
    RENDERER_CRASH: "Chromium's renderer processes are killed: the tab crashes, the browser lives",
    CONNECTION_DROP: "the connection between the agent and its browser server is cut in the "
    "project's relay; the agent's next call reaches a new server with a new browser",
    STALE_DOM: "the page replaces every node the agent has read with a new one of the same "
    "content (references to the old nodes go stale)",
    CONSENT_WALL: "every page shows a consent wall until it is accepted",
    LOGIN_WALL: "every page (and form) sends the visitor to the sign-in form until they sign in",
    SESSION_EXPIRY: "the signed-in session expires: the account's pages ask to sign in again",
    SLOW_RESOURCE: "the next responses for the fault's path are delayed",
    FAILING_RESOURCE: "the next responses for the fault's path fail with HTTP 503",
}
# Kinds the harness carries out on the stack's processes; the others are the site's.
PROCESS_KINDS = frozenset({ENGINE_CRASH, RENDERER_CRASH})
SITE_KINDS = frozenset(KINDS) - PROCESS_KINDS - {NONE, CONNECTION_DROP}
# How long a page gets to say it has replaced its nodes before the agent goes on.
STALE_DOM_WAIT_S = 5.0

RELAY_MODULE = "agent_benchmarks.episode.mcp_relay"
RELAY_LOG = "mcp-relay.jsonl"  # in the attempt folder
# How long the relay gets to say it has cut the connection.
CUT_WAIT_S = 3.0


@dataclass(frozen=True)
class Trigger:
    """When a fault fires: after the agent's ``after_call``-th tool call, or after the call
    during which a page matching ``url_pattern`` (a site path, ``*`` a wildcard) was first
    loaded."""

    after_call: int | None = None
    url_pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> Trigger:
        kind, sep, value = text.partition(":")
        if sep and kind == "call":
            if not value.isdigit() or int(value) < 1:
                raise InputError(f"--fault-at {text}: call:K needs a whole number K of 1 or more")
            return cls(after_call=int(value))
        if sep and kind == "url" and value:
            return cls(url_pattern=value)
        raise InputError(
            f"--fault-at {text}: expected call:K (after the agent's K-th tool call) or "
            "url:PATTERN (once a page whose path matches PATTERN was loaded, e.g. url:/cart*)"
        )

    def describe(self) -> str:
        return (
            f"call:{self.after_call}" if self.after_call is not None else f"url:{self.url_pattern}"
        )


@dataclass(frozen=True)
class FaultPlan:
    """What a run injects: the kind, when, and the kind's parameters."""

    kind: str
    trigger: Trigger | None
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"--fault {self.kind}: the kinds are {', '.join(KINDS)}")
        if self.kind != NONE and self.trigger is None:
            raise InputError(f"--fault {self.kind} needs --fault-at call:K or url:PATTERN")

    @property
    def fires(self) -> bool:
        return self.kind != NONE

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "at": self.trigger.describe() if self.trigger is not None else None,
            "what": KINDS[self.kind],
            "fires": "at the model meter, just before the agent's first model request "
            "after the trigger (the call's result is in; its next action is not made yet)",
            **dict(self.params),
        }


# The site's side of a fault (the suite gives it): the kind's action, which says what it did.
SiteActions = Callable[[str], dict[str, Any]]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = [p.decode("utf-8", "replace") for p in fh.read().split(b"\0") if p]
    except OSError:
        return []
    # Chromium's zygote children rewrite their title: the arguments spaced out in the first.
    return " ".join(argv).split()


_CHROMIUM_NAMES = frozenset({"chromium", "chrome", "headless_shell", "chrome-headless-shell"})


def engine_processes(pids: list[int], kind: str) -> list[tuple[int, str]]:
    """(pid, what) of the engine processes ``kind`` kills among an attempt's processes:
    Lightpanda's (the agent itself when it is ``lightpanda agent``) and Chromium's browser
    process for an engine crash; Chromium's renderers for a renderer crash."""
    found = []
    for pid in pids:
        argv = _cmdline(pid)
        if not argv:
            continue
        program = os.path.basename(argv[0])
        chromium_type = next((a[7:] for a in argv if a.startswith("--type=")), None)
        if kind == ENGINE_CRASH and program == "lightpanda":
            found.append((pid, f"lightpanda {argv[1] if len(argv) > 1 else ''}".strip()))
        elif kind == ENGINE_CRASH and program in _CHROMIUM_NAMES and chromium_type is None:
            found.append((pid, "chromium browser process"))
        elif kind == RENDERER_CRASH and program in _CHROMIUM_NAMES and chromium_type == "renderer":
            found.append((pid, "chromium renderer"))
    return found


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process descending from one of them: Chromium's zygote starts its
    renderers with neither the attempt's marker nor its temp folder in their arguments."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None:
                children.setdefault(stat.ppid, []).append(int(entry))
    found: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.append(pid)
            todo.extend(children.get(pid, []))
    return found


def relay_processes(pids: list[int]) -> list[int]:
    return [pid for pid in pids if RELAY_MODULE in _cmdline(pid)]


class EpisodeFault:
    """One attempt's fault: watched for its trigger, fired once, recorded.

    The engine binds it to the attempt's processes (:meth:`bind`) before the agent starts;
    the model meter calls :meth:`before_model_request`; the site calls :meth:`page_loaded`
    for a URL trigger; the row gets :meth:`record`."""

    def __init__(self, plan: FaultPlan, site: SiteActions | None = None):
        self.plan = plan
        self.site = site
        self._lock = threading.Lock()
        self._marker: str | None = None
        self._tmpdir: str | None = None
        self._workdir: Path | None = None
        self._started: float | None = None  # the agent's first model request
        self._calls_seen = 0
        self._loaded: str | None = None  # the first page matching the URL trigger
        self._loaded_after: int | None = None  # the calls made before the one loading it
        self._fired: dict[str, Any] | None = None

    def bind(self, marker: str, tmpdir: Path, workdir: Path) -> None:
        """The attempt's marker, temp folder and folder: how its processes and its relay's
        log are found."""
        with self._lock:
            self._marker, self._tmpdir, self._workdir = marker, str(tmpdir), workdir

    def page_loaded(self, path: str) -> None:
        """The site served ``path`` (its site path, query included) in this episode."""
        trigger = self.plan.trigger
        if trigger is None or trigger.url_pattern is None:
            return
        with self._lock:
            if self._loaded is None and fnmatch.fnmatchcase(path, trigger.url_pattern):
                self._loaded, self._loaded_after = path, self._calls_seen

    def before_model_request(self, calls_made: int) -> None:
        """The meter's hook: fire now if the trigger has come."""
        with self._lock:
            if self._started is None:
                self._started = time.monotonic()
            self._calls_seen = max(self._calls_seen, calls_made)
            if self._fired is not None or not self.plan.fires or not self._due(calls_made):
                return
            self._fired = {"fired": True, "fired_at_call": calls_made}
        started = time.monotonic()
        try:
            action = self._act()
        except Exception as exc:  # recorded: a fault that failed to act did not fire
            action = {"error": f"{type(exc).__name__}: {exc}"}
        with self._lock:
            assert self._started is not None
            self._fired |= {
                # From the agent's first model request: the episode's own clock.
                "fired_after_s": round(started - self._started, 3),
                "action_s": round(time.monotonic() - started, 3),
                "action": action,
            }
            if action.get("error") or action.get("done") is False:
                self._fired["fired"] = False

    def _due(self, calls_made: int) -> bool:
        trigger = self.plan.trigger
        assert trigger is not None
        if trigger.after_call is not None:
            return calls_made >= trigger.after_call
        return self._loaded is not None

    def _act(self) -> dict[str, Any]:
        kind = self.plan.kind
        if kind in PROCESS_KINDS or kind == CONNECTION_DROP:
            if self._marker is None:
                return {"error": "the attempt's processes are not known (not bound)"}
            pids = with_descendants(attempt_pids(self._marker, self._tmpdir))
            if kind == CONNECTION_DROP:
                assert self._workdir is not None
                return _cut(relay_processes(pids), self._workdir / RELAY_LOG)
            return _kill(engine_processes(pids, kind))
        if self.site is None:
            return {"error": f"{kind} needs the site's side, which this suite does not give"}
        return self.site(kind)

    def record(self) -> dict[str, Any]:
        """``details.fault`` of the attempt's row."""
        plan = self.plan
        out: dict[str, Any] = {"kind": plan.kind, "at": None}
        if plan.trigger is not None:
            out["at"] = plan.trigger.describe()
        with self._lock:
            if self._fired is not None:
                out |= self._fired
            elif not plan.fires:
                out["fired"] = False
            else:
                out |= {"fired": False, "why": self._why_not()}
            if self._loaded is not None:
                out |= {"page_loaded": self._loaded, "loaded_after_call": self._loaded_after}
            out["tool_calls_seen"] = self._calls_seen
        return out

    def _why_not(self) -> str:
        trigger = self.plan.trigger
        assert trigger is not None
        if trigger.after_call is not None:
            return (
                f"the agent asked the model again after {self._calls_seen} tool call(s); the "
                f"fault was due after call {trigger.after_call}"
            )
        if self._loaded is None:
            return f"no page matching {trigger.url_pattern} was loaded"
        return "the agent made no model request after the page was loaded"


def _kill(targets: list[tuple[int, str]]) -> dict[str, Any]:
    if not targets:
        return {"done": False, "error": "no engine process of the attempt was found"}
    killed = []
    for pid, what in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append({"pid": pid, "what": what})
    return {"done": bool(killed), "killed": killed}


def _cuts(log: Path) -> int:
    try:
        return log.read_text(encoding="utf-8").count('"event": "cut"')
    except OSError:
        return 0


def _cut(relays: list[int], log: Path) -> dict[str, Any]:
    """Signal the attempt's relay to cut, and wait until its log says it has: the agent's
    next call must find the connection cut."""
    if not relays:
        return {
            "done": False,
            "error": "no relay of the attempt was found (the stack's browser server is not "
            "an MCP server the harness relays)",
        }
    before = _cuts(log)
    for pid in relays:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + CUT_WAIT_S
    while _cuts(log) <= before:
        if time.monotonic() > deadline:
            return {"done": False, "error": f"the relay did not cut within {CUT_WAIT_S:g} s"}
        time.sleep(0.02)
    return {"done": True, "relays_signalled": len(relays)}


def relayed(server: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """An MCP server's config entry (``command``, ``args``, ``env``) run through the relay,
    which logs to the attempt folder."""
    log = str(workdir / RELAY_LOG)
    args = ["-m", RELAY_MODULE, "--log", log, "--", server["command"], *server["args"]]
    return server | {"command": sys.executable, "args": args}
