"""A run of the engine benchmark: upstream's rotations, on the bundled site, into raw.jsonl.

Task after task: the warm configurations' engines (or MCP sessions) are started and held;
then ``warmup`` rotations that are recorded but not reported, then ``runs`` measured ones.
A rotation is one execution of every configuration in every mode (cold, warm), in an order
shifted by one each rotation (so no configuration always runs first, or just after another
one), each followed by ``pace`` seconds of quiet.

Each execution browses an episode of its own on the site (``/t/<config>.<task>.<mode
rotation>/``: its own cookies, cart and request log); under ``--web`` every configuration
replays (or records) the same URLs, one episode per task, and the site re-enacts what the
archive answered so that the contract sees the episode. The task's contract decides
whether the execution did the task: one that did not is recorded as discarded (``ok``
false, no time) with the clauses that failed, and counted; a configuration that fails
``give_up_after`` executions of a task in a row does not run it again (as upstream stops a
configuration that keeps failing), and a record says so.

``raw.jsonl`` is append-only: the meta record, then one record per execution, each flushed
to disk when written, so an interrupted run keeps what it measured and the report can be
made from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from agent_benchmarks.backends.lightpanda import bundled_binary, check_binary
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import redact_argv
from agent_benchmarks.enginebench import configs as configurations
from agent_benchmarks.enginebench import executions, mcp_client, measure
from agent_benchmarks.enginebench.configs import Configuration
from agent_benchmarks.enginebench.executions import Context, Held, Outcome
from agent_benchmarks.enginebench.meta import meta_record
from agent_benchmarks.enginebench.raw import MODES
from agent_benchmarks.enginebench.tasks import EngineTask, resolve_tasks
from agent_benchmarks.isolation.scratch import temp_root, temp_root_warning
from agent_benchmarks.localweb.session import RECORDED_SITE_PORT, reenacted
from agent_benchmarks.localweb.site import Faults, LocalSite
from agent_benchmarks.localweb.tasks import site_record
from agent_benchmarks.runner.claim import FolderLock, claim_new_folder, lock_folder
from agent_benchmarks.spec.provenance import utc_now, utc_stamp
from agent_benchmarks.web.archive import open_archive
from agent_benchmarks.web.service import WebProxy, web_details

RAW = "raw.jsonl"
SCRATCH_PREFIX = "ab-engine-"  # + its owner: short, as browsers' socket paths must be
_STALE_SCRATCH = re.compile(rf"^{SCRATCH_PREFIX}(\d+-\d+)-")
_MAX_ANSWER = 300


@dataclass
class Settings:
    out_dir: Path | None  # None: results/engine/<UTC stamp>
    tasks: list[str]
    configs: list[str]
    slow: dict[str, int] = field(default_factory=dict)
    modes: list[str] = field(default_factory=lambda: list(MODES))
    runs: int = 10
    warmup: int = 2
    pace_s: float = 1.0
    wait: str = "load"
    timeout_s: float = 120.0
    sample_ms: int = 50
    crawl_pages: int = 30
    crawl_parallel: int = 3
    give_up_after: int = 3
    min_valid_share: float = 0.8
    web: Literal["record", "replay"] | None = None
    archive: Path | None = None
    site_port: int | None = None
    lightpanda: Path | None = None

    def recorded(self) -> dict[str, Any]:
        """What the meta record keeps of them."""
        kept = asdict(self)
        for key in ("out_dir", "archive", "lightpanda"):
            kept[key] = None if kept[key] is None else str(kept[key])
        return kept


def _node() -> str:
    found = shutil.which("node")
    if found is None:
        raise InputError("node not found: Node.js runs the Puppeteer and Playwright drivers")
    return found


def _stacks(chosen: list[Configuration], lightpanda: str) -> dict[str, mcp_client.McpStack]:
    return {c.server: mcp_client.McpStack(c.server, lightpanda) for c in chosen if c.kind == "mcp"}


@contextmanager
def _site(settings: Settings, chosen: list[Configuration]) -> Iterator[LocalSite]:
    """The site: a slowed variant's pages slowed; at the recorded address under --web."""
    slowed = tuple((f"{c.slug}.", c.slow_ms) for c in chosen if c.slow_ms)
    port, advertised = settings.site_port or 0, None
    if settings.web is not None:
        port = settings.site_port or RECORDED_SITE_PORT
    if settings.web == "replay":
        if slowed:
            raise InputError("--slow does not apply to --web replay (the archive answers)")
        advertised, port = f"http://127.0.0.1:{port}", 0
    site = LocalSite(port=port, faults=Faults(task_latency_ms=slowed), advertised=advertised)
    try:
        site.start()
    except OSError as exc:
        raise InputError(f"the site cannot listen on 127.0.0.1:{port} ({exc.strerror})") from None
    with site:
        yield site


def _claim_output(out_dir: Path | None, argv: list[str], log) -> tuple[Path, FolderLock]:
    """The run's folder, made for this run alone and locked while it writes there, as a
    run's (runner/claim.py): ``out_dir``, which must not exist (a run's raw file is never
    added to), or ``results/engine/<UTC stamp>`` (``-2``, ``-3``... when another run took
    that second, which the run says); its raw.jsonl's path and the folder's lock."""
    if out_dir is None:
        base = Path("results") / "engine" / utc_stamp()
        try:
            folder, lock = claim_new_folder(base, argv)
        except OSError as exc:
            raise InputError(f"{base.parent}: cannot make a run folder ({exc.strerror})") from None
        if folder != base:
            print(
                f"{base.name} was taken by another run started in the same second: this "
                f"run's folder is {folder}",
                file=log,
            )
        return folder / RAW, lock
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        out_dir.mkdir()
    except FileExistsError:
        raise InputError(
            f"--out-dir {out_dir}: already exists (a run writes a new folder)"
        ) from None
    except OSError as exc:
        raise InputError(f"--out-dir {out_dir}: cannot make it ({exc.strerror})") from None
    return out_dir / RAW, lock_folder(out_dir, argv, made=True)


class _Raw:
    """raw.jsonl, made at its first record: a run that stops before its meta record leaves
    no file, and its empty folder is removed with its lock."""

    def __init__(self, path: Path):
        self.path = path
        self._fh: TextIO | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (held for the run)
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def _episode(settings: Settings, config: Configuration, task: EngineTask, mode: str, r: int) -> str:
    task_slug = task.name.removeprefix("localweb:")
    if settings.web is not None:
        return f"web.{task_slug}"  # the recorded URLs, the same for every execution
    return f"{config.slug}.{task_slug}.{mode[0]}{r}"


def _check_episodes(
    settings: Settings, chosen: list[Configuration], tasks: list[EngineTask]
) -> None:
    total = settings.warmup + settings.runs
    for config in chosen:
        for task in tasks:
            longest = _episode(settings, config, task, "cold", total)
            if len(longest) > 64:
                raise InputError(f"the site's task id {longest!r} is over 64 characters")


def _sweep(log) -> None:
    """What runs killed before they could clean up left: their processes, cgroups and
    scratch folders (each named for the process of its run)."""
    swept = measure.sweep_stale()
    for entry in temp_root().iterdir():
        owned = _STALE_SCRATCH.match(entry.name)
        if owned and entry.is_dir() and not measure.owner_alive(owned.group(1)):
            shutil.rmtree(entry, ignore_errors=True)
            swept += 1
    if swept:
        print(f"removed {swept} process(es), cgroup(s) and folder(s) of killed runs", file=log)


@contextmanager
def _interrupted_once() -> Iterator[None]:
    """Ctrl-C stops the run, once: a terminal sends SIGINT to the whole group and ``uv run``
    passes it on again, and a second KeyboardInterrupt would cut short the clean-up (held
    browsers killed, cgroups and scratch removed) that the first one started."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run(settings: Settings, argv: list[str], log=sys.stderr) -> Path:
    """Run the benchmark; the path of its raw.jsonl."""
    with _interrupted_once():
        return _run(settings, argv, log)


def _run(settings: Settings, argv: list[str], log) -> Path:
    if settings.runs < 1 or settings.warmup < 0:
        raise InputError("--runs must be at least 1 and --warmup at least 0")
    bad_modes = set(settings.modes) - set(MODES)
    if bad_modes or not settings.modes:
        raise InputError(f"--modes: cold, warm or both (got {', '.join(settings.modes)})")
    chosen = configurations.select(settings.configs, settings.slow)
    tasks = resolve_tasks(settings.tasks, settings.crawl_pages, settings.crawl_parallel)
    _check_episodes(settings, chosen, tasks)
    lightpanda = settings.lightpanda or bundled_binary()
    check_binary(lightpanda)
    node = _node()
    stacks = _stacks(chosen, str(lightpanda))
    proxy = None
    if settings.web is not None:
        if settings.archive is None:
            raise InputError(f"--web {settings.web} needs an archive")
        archive = open_archive(settings.archive)
        if settings.web == "replay":
            archive.check_replayable()
        else:
            archive.check_recordable()
        proxy = WebProxy(settings.web, archive, nss_db=any(c.engine == "chromium" for c in chosen))
    _sweep(log)
    if (warning := temp_root_warning()) is not None:
        print(warning, file=log)
    raw_path, lock = _claim_output(settings.out_dir, redact_argv(argv), log)
    raw = _Raw(raw_path)
    scratch = None
    try:
        # Short, in the temp root: the browsers' socket paths live in it.
        prefix = f"{SCRATCH_PREFIX}{measure.OWNER}-"
        scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=temp_root()))
        with ExitStack() as stack:
            site = stack.enter_context(_site(settings, chosen))
            if proxy is not None:
                stack.enter_context(proxy)
            portal = stack.enter_context(mcp_client.portal()) if stacks else None
            ctx = Context(
                lightpanda=str(lightpanda),
                node=node,
                scratch=scratch,
                wait=settings.wait,
                timeout_s=settings.timeout_s,
                sample_ms=settings.sample_ms,
                proxy=proxy,
                portal=portal,
                stacks=stacks,
            )
            raw.write(
                meta_record(
                    argv=redact_argv(argv),
                    settings=settings.recorded(),
                    configs=chosen,
                    tasks=tasks,
                    lightpanda=str(lightpanda),
                    node=node,
                    stacks=stacks,
                    site=site.describe(),
                )
            )
            for task in tasks:
                _run_task(settings, ctx, site, chosen, task, raw, log)
    finally:
        raw.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        lock.release()
    return raw_path


def _run_task(
    settings: Settings,
    ctx: Context,
    site: LocalSite,
    chosen: list[Configuration],
    task: EngineTask,
    raw: _Raw,
    log,
) -> None:
    pairs = [(c, m) for c in chosen for m in settings.modes]
    held: dict[str, Held | None] = {}
    unheld: dict[str, str] = {}  # configurations whose warm engine did not start: why
    failures: dict[tuple[str, str], int] = {}
    given_up: set[tuple[str, str]] = set()
    total = settings.warmup + settings.runs
    try:
        if "warm" in settings.modes:
            for config in chosen:
                try:
                    held[config.name] = executions.hold(ctx, config, task)
                except Exception as exc:  # its warm executions fail, and say why
                    unheld[config.name] = f"{type(exc).__name__}: {exc}"[:600]
        for rotation in range(total):
            shift = rotation % len(pairs)
            for position, (config, mode) in enumerate(pairs[shift:] + pairs[:shift]):
                key = (config.name, mode)
                if key in given_up:
                    continue
                if mode == "warm" and config.name in unheld:
                    outcome = Outcome(error=f"the held engine did not start: {unheld[config.name]}")
                    episode = _episode(settings, config, task, mode, rotation)
                    record = _record(settings, site, config, task, mode, rotation, episode, outcome)
                else:
                    record = _execute(settings, ctx, site, config, task, mode, rotation, held)
                record["position"] = position
                raw.write(record)
                _progress(log, record, rotation, settings)
                failures[key] = 0 if record["ok"] else failures.get(key, 0) + 1
                if failures[key] >= settings.give_up_after:
                    given_up.add(key)
                    raw.write(
                        {
                            "kind": "given_up",
                            "task": task.name,
                            "config": config.name,
                            "mode": mode,
                            "rotation": rotation,
                            "failed_in_a_row": failures[key],
                        }
                    )
                time.sleep(settings.pace_s)
    finally:
        for resources in held.values():
            if resources is not None:
                resources.release(ctx.proxy)


def _execute(
    settings: Settings,
    ctx: Context,
    site: LocalSite,
    config: Configuration,
    task: EngineTask,
    mode: str,
    rotation: int,
    held: dict[str, Held | None],
) -> dict[str, Any]:
    episode = _episode(settings, config, task, mode, rotation)
    root = site.begin_task(episode)
    folder = ctx.folder("executions", episode, f"{mode}{rotation}")
    outcome = executions.execute(
        ctx, config, task, root, mode, held.get(config.name) if mode == "warm" else None, folder
    )
    if site.advertised is not None:  # replaying: the site learns what the archive answered
        for request in outcome.web_requests:
            site.reenact(*reenacted(request))
    shutil.rmtree(folder, ignore_errors=True)
    return _record(settings, site, config, task, mode, rotation, episode, outcome)


def _record(
    settings: Settings,
    site: LocalSite,
    config: Configuration,
    task: EngineTask,
    mode: str,
    rotation: int,
    episode: str,
    outcome: Outcome,
) -> dict[str, Any]:
    answer = None if outcome.readings is None else task.answer(outcome.readings)
    site_log = site.requests_for(episode)
    failed = []
    if outcome.error is None:
        clauses = task.contract.check(answer, site_record(site, episode))
        failed = [f"{c.clause}: {c.reason}" for c in clauses if not c.passed]
    ok = outcome.error is None and not failed
    usage = outcome.usage
    record: dict[str, Any] = {
        "kind": "execution",
        "task": task.name,
        "config": config.name,
        "driver": config.driver,
        "engine": config.engine,
        "mode": mode,
        "rotation": rotation,
        "warmup": rotation < settings.warmup,
        "episode": episode,
        "ts": utc_now(),  # when it ended: drift over a session shows in these
        "ok": ok,
        # A discarded execution is counted, never timed.
        "ms": outcome.ms if ok else None,
        "launch_ms": outcome.launch_ms if ok else None,
        "cpu_s": usage.cpu_s if ok and usage else None,
        "peak_pss_mb": usage.peak_pss_mb if ok and usage else None,
        "cgroup_peak_mb": usage.cgroup_peak_mb if ok and usage else None,
        "tool_calls": outcome.tool_calls,
        "requests": len(site_log),
        "pages": sum(not r.path.startswith("/static/") for r in site_log),
    }
    if settings.web is not None:
        record["web"] = web_details(settings.web, outcome.web_requests)
    if not ok:
        record["error"] = outcome.error or "contract failed"
        record["failed_clauses"] = failed
        record["answer"] = None if answer is None else answer[:_MAX_ANSWER]
    return record


def _progress(log, record: dict[str, Any], rotation: int, settings: Settings) -> None:
    label = (
        f"warm-up {rotation + 1}/{settings.warmup}"
        if record["warmup"]
        else f"run {rotation - settings.warmup + 1}/{settings.runs}"
    )
    if record["ok"]:
        status = f"{record['ms']:.0f} ms"
    else:
        status = f"DISCARDED ({(record['error'] + ' ' + '; '.join(record['failed_clauses']))[:90]})"
    print(f"[{record['task']} {label}] {record['config']} {record['mode']}: {status}", file=log)
