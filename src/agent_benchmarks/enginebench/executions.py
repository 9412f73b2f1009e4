"""One execution of a task by a configuration, cold or warm, timed and measured.

- cold: nothing of the configuration runs before the timer. A CDP driver's timer covers the
  engine's launch, its readiness poll and the driver process (upstream's cold); the
  PandaScript replay's, its one process; an MCP stack's, the server's start, the MCP
  handshake and the steps. The kill comes after the timer.
- warm: the engine (an MCP stack: its sessions, initialised) is held for the whole task;
  the timer covers a fresh driver process connecting to it (upstream's warm), or for an MCP
  stack the steps alone: an agent's steps on a running stack. PandaScript holds nothing,
  and its warm execution is its cold one, as upstream's.

Every process of an execution is a member of its meter (a held engine's meter, warm), so
its CPU seconds and peak memory are those of the whole tree. The reads come back in the
oracle's reading form, or the execution failed with an error saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal

from agent_benchmarks.backends.web_routing import lightpanda_web_args
from agent_benchmarks.enginebench import engines, mcp_client, programs
from agent_benchmarks.enginebench.configs import PANDASCRIPT, Configuration
from agent_benchmarks.enginebench.engines import CHROMIUM
from agent_benchmarks.enginebench.measure import Measurement, Meter, Usage
from agent_benchmarks.enginebench.processes import Finished, Prepared
from agent_benchmarks.enginebench.tasks import EngineTask
from agent_benchmarks.localweb.oracle import OracleStuck
from agent_benchmarks.web.service import AttemptWeb, WebProxy

_DRIVER_FILES = {
    "puppeteer": "puppeteer.mjs",
    "playwright": "playwright.mjs",
    "playwright-py": "playwright_py.py",
}
_ERROR_TAIL = 600


@dataclass
class Outcome:
    ms: float | None = None
    launch_ms: float | None = None  # cold CDP: the engine's launch to ready, within ms
    usage: Usage | None = None
    readings: list[str] | None = None
    tool_calls: int | None = None  # an MCP stack's: what the steps took on its tools
    error: str | None = None
    web_requests: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Context:
    """What every execution of a run shares."""

    lightpanda: str
    node: str
    scratch: Path  # the run's: short, in the system temp folder
    wait: str
    timeout_s: float
    sample_ms: int
    proxy: WebProxy | None = None
    portal: BlockingPortal | None = None
    stacks: dict[str, mcp_client.McpStack] = field(default_factory=dict)
    profiles: dict[str, Path] = field(default_factory=dict)  # a Chromium profile per config
    task_files: dict[str, tuple[Path, Path]] = field(default_factory=dict)  # program, script

    def folder(self, *parts: str) -> Path:
        path = self.scratch.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def web(self) -> AttemptWeb | None:
        return self.proxy.attempt() if self.proxy is not None else None

    def files(self, task: EngineTask) -> tuple[Path, Path]:
        """The task's JSON program and PandaScript file, written once per run."""
        if task.name not in self.task_files:
            folder = self.folder("tasks", task.name.replace(":", "-"))
            program = folder / "program.json"
            program.write_text(json.dumps(programs.program(task, self.wait)))
            script = folder / "task.js"
            script.write_text(programs.pandascript(task, self.wait))
            self.task_files[task.name] = (program, script)
        return self.task_files[task.name]

    def chromium_profile(self, config: Configuration) -> Path:
        """The profile a configuration's cold Chromium launches reuse, made once."""
        if config.name not in self.profiles:
            meter = Meter()
            try:
                folder = self.folder("profiles", config.slug)
                self.profiles[config.name] = engines.prepare_profile(folder, meter, self.scratch)
            finally:
                meter.close()
        return self.profiles[config.name]


@dataclass
class Held:
    """A configuration's warm resources for one task: its meter, with an engine (CDP) or
    open sessions (MCP) in it, and the proxy port they browse through."""

    meter: Meter
    stack: ExitStack
    web: AttemptWeb | None
    launch: engines.Launch | None = None
    endpoint_file: Path | None = None
    sessions: list[Any] = field(default_factory=list)

    def release(self, proxy: WebProxy | None) -> None:
        try:
            self.stack.close()
        finally:
            if self.launch is not None:
                self.launch.stop()
            self.meter.close()
            if proxy is not None and self.web is not None:
                proxy.release(self.web)


def hold(ctx: Context, config: Configuration, task: EngineTask) -> Held | None:
    """Start what a configuration keeps running through a task's warm executions; None
    for PandaScript, which has nothing to keep."""
    if config.kind == PANDASCRIPT:
        return None
    meter, web = Meter(), ctx.web()
    held = Held(meter, ExitStack(), web)
    folder = ctx.folder("held", config.slug, task.name.replace(":", "-"))
    try:
        if config.kind == "cdp":
            held.launch = engines.prepare(
                config.engine, meter, folder, ctx.lightpanda, ctx.scratch, web
            )
            held.endpoint_file = folder / "endpoint"
            held.endpoint_file.write_text(held.launch.start())
        else:
            held.sessions = _open_sessions(ctx, held.stack, config, task, meter, folder, web, False)
            assert ctx.portal is not None
            ctx.portal.call(mcp_client.initialize, held.sessions, ctx.timeout_s)
    except BaseException:
        held.release(ctx.proxy)
        raise
    return held


def _open_sessions(
    ctx: Context,
    stack: ExitStack,
    config: Configuration,
    task: EngineTask,
    meter: Meter,
    folder: Path,
    web: AttemptWeb | None,
    gate: bool,
) -> list[Any]:
    assert ctx.portal is not None
    server = ctx.stacks[config.server]
    specs = [
        server.session_spec(meter, gate, folder / f"session{k}", ctx.scratch, web)
        for k in range(len(task.workers))
    ]
    for spec in specs:
        stack.callback(shutil.rmtree, spec.tmpdir, True)
    opened = ctx.portal.wrap_async_context_manager(mcp_client.sessions(specs))
    sessions = opened.__enter__()
    # Closed as if nothing happened, whatever did: a KeyboardInterrupt handed on to the
    # sessions' event loop would stop the loop itself (asyncio lets it through), and every
    # other session on it with it.
    stack.callback(opened.__exit__, None, None, None)
    return sessions


def execute(
    ctx: Context,
    config: Configuration,
    task: EngineTask,
    root: str,
    mode: str,
    held: Held | None,
    folder: Path,
) -> Outcome:
    """One execution of ``task`` by ``config`` on the episode at ``root``."""
    if config.kind == PANDASCRIPT:
        return _pandascript(ctx, task, root, folder)
    if config.kind == "cdp":
        return _cdp(ctx, config, task, root, held, folder)
    return _mcp(ctx, config, task, root, held, folder)


def _driver(
    ctx: Context, config: Configuration, task: EngineTask, root: str
) -> tuple[list[str], dict[str, str]]:
    """The driver's command line and environment (its endpoint file is added per launch)."""
    program, _ = ctx.files(task)
    path = programs.driver_file(_DRIVER_FILES[config.driver])
    runner = sys.executable if config.driver == "playwright-py" else ctx.node
    env = {
        **os.environ,
        "ENGINEBENCH_PROGRAM": str(program),
        "ENGINEBENCH_BASE_URL": root.rstrip("/"),
    }
    return [runner, str(path)], env


def _script_outcome(task: EngineTask, finished: Finished, outcome: Outcome) -> Outcome:
    """The reads a driver process printed, or why there are none."""
    if finished.returncode is None:
        outcome.error = "timeout"
    elif finished.returncode != 0:
        outcome.error = f"exit {finished.returncode}: {finished.stderr.strip()[-_ERROR_TAIL:]}"
    else:
        try:
            outcome.readings = programs.readings(task, json.loads(finished.stdout)["reads"])
        except (ValueError, KeyError, TypeError) as exc:
            outcome.error = f"unreadable output ({exc}): {finished.stdout[:200]!r}"
    return outcome


@contextmanager
def _cold_web(ctx: Context) -> Iterator[tuple[AttemptWeb | None, list[dict[str, Any]]]]:
    """A proxy port for one cold execution (with --web), and, once it has ended, the
    requests it answered for it."""
    web = ctx.web()
    requests: list[dict[str, Any]] = []
    try:
        yield web, requests
    finally:
        if web is not None and ctx.proxy is not None:
            requests += ctx.proxy.requests_of(web)


def _run_driver(
    ctx: Context, meter: Meter, process: Prepared, launch: engines.Launch | None = None
) -> tuple[Outcome, Finished | None]:
    """Time ``process`` (after ``launch``'s start, cold CDP), measuring ``meter``."""
    measurement = Measurement(meter, ctx.sample_ms)
    outcome, finished = Outcome(), None
    try:
        began = time.perf_counter()
        if launch is not None:
            Path(process.env["ENGINEBENCH_ENDPOINT_FILE"]).write_text(launch.start())
            outcome.launch_ms = launch.ready_ms
        process.go()
        finished = process.wait(ctx.timeout_s)
        outcome.ms = (time.perf_counter() - began) * 1000
    except engines.EngineFailed as exc:
        outcome.error = f"engine: {exc}"
    finally:
        outcome.usage = measurement.stop()
    return outcome, finished


def _pandascript(ctx: Context, task: EngineTask, root: str, folder: Path) -> Outcome:
    _, script = ctx.files(task)
    meter = Meter()
    try:
        with _cold_web(ctx) as (web, requests):
            argv = [ctx.lightpanda, "run", *lightpanda_web_args(web), str(script)]
            env = {**engines.lightpanda_env(), "LP_BASE_URL": root.rstrip("/")}
            process = Prepared(argv, env, meter, folder, "pandascript")
            outcome, finished = _run_driver(ctx, meter, process)
    finally:
        meter.close()
    outcome.web_requests = requests
    return outcome if finished is None else _script_outcome(task, finished, outcome)


def _cdp(
    ctx: Context,
    config: Configuration,
    task: EngineTask,
    root: str,
    held: Held | None,
    folder: Path,
) -> Outcome:
    argv, env = _driver(ctx, config, task, root)
    if held is not None:
        assert held.endpoint_file is not None
        env["ENGINEBENCH_ENDPOINT_FILE"] = str(held.endpoint_file)
        seen = len(_requests_so_far(ctx, held.web))
        driver = Prepared(argv, env, held.meter, folder, "driver")
        outcome, finished = _run_driver(ctx, held.meter, driver)
        outcome.web_requests = _requests_so_far(ctx, held.web)[seen:]
        return outcome if finished is None else _script_outcome(task, finished, outcome)
    meter, launch = Meter(), None
    try:
        with _cold_web(ctx) as (web, requests):
            profile = ctx.chromium_profile(config) if config.engine == CHROMIUM else None
            launch = engines.prepare(
                config.engine, meter, folder, ctx.lightpanda, ctx.scratch, web, profile
            )
            env["ENGINEBENCH_ENDPOINT_FILE"] = str(folder / "endpoint")
            driver = Prepared(argv, env, meter, folder, "driver")
            outcome, finished = _run_driver(ctx, meter, driver, launch)
    finally:
        if launch is not None:
            launch.stop()
        meter.close()
    outcome.web_requests = requests
    return outcome if finished is None else _script_outcome(task, finished, outcome)


def _requests_so_far(ctx: Context, web: AttemptWeb | None) -> list[dict[str, Any]]:
    if ctx.proxy is None or web is None:
        return []
    return ctx.proxy.requests_so_far(web)


def _mcp(
    ctx: Context,
    config: Configuration,
    task: EngineTask,
    root: str,
    held: Held | None,
    folder: Path,
) -> Outcome:
    surface = ctx.stacks[config.server].surface
    if held is not None:
        seen = len(_requests_so_far(ctx, held.web))
        measurement = Measurement(held.meter, ctx.sample_ms)
        try:
            began = time.perf_counter()
            outcome = _play(ctx, held.sessions, surface, task, root)
            outcome.ms = (time.perf_counter() - began) * 1000
        finally:
            usage = measurement.stop()
        outcome.usage = usage
        outcome.web_requests = _requests_so_far(ctx, held.web)[seen:]
        return outcome
    assert ctx.portal is not None
    meter = Meter()
    try:
        with _cold_web(ctx) as (web, requests), ExitStack() as sessions:
            opened = _open_sessions(ctx, sessions, config, task, meter, folder, web, True)
            shells = mcp_client.gated_shells(meter, len(opened)) if meter.joins else set()
            measurement = Measurement(meter, ctx.sample_ms)
            try:
                began = time.perf_counter()
                mcp_client.let_all_go(shells)
                try:
                    ctx.portal.call(mcp_client.initialize, opened, ctx.timeout_s)
                except Exception as exc:  # the server did not start: one clear error
                    outcome = Outcome(error=f"MCP handshake: {type(exc).__name__}: {exc}")
                else:
                    outcome = _play(ctx, opened, surface, task, root)
                outcome.ms = (time.perf_counter() - began) * 1000
            finally:
                usage = measurement.stop()
            outcome.usage = usage
    finally:
        meter.close()
    outcome.web_requests = requests
    return outcome


def _play(ctx: Context, sessions: list[Any], surface: Any, task: EngineTask, root: str) -> Outcome:
    assert ctx.portal is not None
    try:
        readings, calls = ctx.portal.call(
            mcp_client.run_task, sessions, surface, task, root, ctx.timeout_s
        )
    except TimeoutError:
        return Outcome(error="timeout")
    except OracleStuck as stuck:
        return Outcome(error=f"stuck: {stuck}")
    except Exception as exc:  # a session that broke mid-task (the server died)
        return Outcome(error=f"{type(exc).__name__}: {str(exc)[:_ERROR_TAIL]}")
    return Outcome(readings=readings, tool_calls=calls)
