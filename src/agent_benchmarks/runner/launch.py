"""A run from its spec to a graded run folder: the runner's side of every run command.

:func:`prepare` checks everything a run needs before anything starts (the backend and its
programs and keys, the tasks, the grader it ends with, a resumed run's manifest) and returns
a :class:`PreparedRun`; :func:`open_run` starts its services and writes its manifest;
:func:`launch` is the whole of one run. A sweep prepares all its cells first, so that a cell
that cannot start is named before any runs, then runs them through one executor.

A run's defining fields (provider, model, timeout, repeat, prompt, the backend's own) are
stored in the manifest (``settings.flags``, and the whole spec in ``spec``). A resume takes
them from there; a field the user gave again (``spec.typed``) must hold the manifest's
value, because a run must not change what it measures halfway.
"""

from __future__ import annotations

import shlex
import ssl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from agent_benchmarks.backends.base import Backend, BackendDef, BuildRequest
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import redact_argv
from agent_benchmarks.episode.budget import Budget, budget_record
from agent_benchmarks.episode.meter import ModelMeter
from agent_benchmarks.isolation.process import memory_cap_method
from agent_benchmarks.isolation.resources import this_machine
from agent_benchmarks.isolation.scratch import run_key, temp_root_warning
from agent_benchmarks.records.pricing import PriceTable, load_price_table
from agent_benchmarks.records.schema import Manifest, Mode, RunSession, Scores, Task
from agent_benchmarks.records.storage import PredictionsStream, current_task_id, write_json_atomic
from agent_benchmarks.runner.autosize import PoolSizing, resources_manifest
from agent_benchmarks.runner.claim import FolderLock, claim_new_folder, lock_folder
from agent_benchmarks.runner.engine import AttemptRunner, RunOutcome
from agent_benchmarks.runner.executor import Executor, LocalPool
from agent_benchmarks.runner.plan import INJECTED_FAULT, Plan, plan_attempts
from agent_benchmarks.runner.session import (
    SessionFactory,
    TaskSession,
    dataset_session,
    prompted_session,
)
from agent_benchmarks.scoring.graders import make_grader
from agent_benchmarks.scoring.scorecard import Grader, grade_and_report, read_manifest
from agent_benchmarks.spec.datasets import (
    LoadedDataset,
    Selection,
    load_dataset_bundled,
    load_tasks,
    select_tasks,
    sha256_file,
)
from agent_benchmarks.spec.prompts import (
    PROMPT_NAMES,
    STANDARD,
    default_prompt_name,
    prompt_variant,
)
from agent_benchmarks.spec.provenance import build_manifest, git_state, utc_now
from agent_benchmarks.spec.run_spec import (
    DEFAULT_RESOURCE_SAMPLE_MS,
    RUN_FIELDS,
    Options,
    RunSpec,
)
from agent_benchmarks.spec.suites import (
    SuiteDef,
    backend_def,
    grading_options,
    load_ref,
    suite_def,
    suite_options,
)
from agent_benchmarks.web.archive import WaczArchive, WebArchive, open_archive
from agent_benchmarks.web.service import (
    WEB_PROXY_DESCRIPTION,
    ProxyFailed,
    WebProxy,
    rules_sha256,
)

# Selection fields: a resumed run keeps the manifest's task ids; given again, they must say
# what the manifest's selection says.
SELECTION_FIELDS = (
    "limit",
    "task_ids",
    "level",
    "site",
    "sample_per_site",
    "sample_seed",
    "skip_attachments",
)


def load_selected(suite: SuiteDef, spec: RunSpec) -> tuple[LoadedDataset, list[Task]]:
    """The suite's tasks as the spec selects them."""
    s = spec.selection
    selection = Selection(
        task_ids=s.task_ids,
        limit=s.limit,
        level=s.level,
        skip_attachments=s.skip_attachments,
        site=s.site,
        sample_per_site=s.sample_per_site,
        sample_seed=s.sample_seed,
        as_dict=s.recorded(),
    )
    if suite.bundled is not None:
        if spec.dataset_file is not None:
            raise InputError(f"--dataset-file: {suite.name} bundles its own tasks")
        loaded = suite.bundled()
        return loaded, select_tasks(loaded.tasks, selection)
    assert suite.dataset is not None
    config = None
    if "level" in suite.selection_flags:
        config = "2023_all" if s.level is None else f"2023_level{s.level}"
    loaded = load_tasks(
        suite.dataset,
        split=spec.split or suite.dataset.default_split,
        dataset_file=spec.dataset_file,
        config=config,
        revision=spec.revision,
    )
    return loaded, select_tasks(loaded.tasks, selection, suite.dataset.default_per_site)


@dataclass
class PreparedRun:
    """A run checked and ready to start: its folder is claimed (created for a new run, and
    locked), and nothing else has been started or written yet."""

    spec: RunSpec
    prog: str
    argv: list[str]
    suite: SuiteDef
    definition: BackendDef
    backend: Backend
    run_dir: Path
    manifest: Manifest | None  # the resumed run's; None for a new run
    loaded: LoadedDataset
    tasks: list[Task]
    plan: Plan
    mode: Mode
    scripted_model: str | None
    model: str | None
    prices: PriceTable
    grader: Grader | None
    empty_retry: bool
    # --web record|replay: the archive (None: the live web).
    web_archive: WebArchive | WaczArchive | None = None
    warnings: list[str] = field(default_factory=list)
    # The run's hold on its folder, released when the run ends (None: not claimed yet).
    lock: FolderLock | None = None

    @property
    def predictions_path(self) -> Path:
        return self.run_dir / "predictions.jsonl"

    def grade_later(self) -> str:
        """The command that grades this run as it would have been graded at its end."""
        options = grading_options(self.suite)
        flags: list[str] = []
        for name in options.model_fields:
            if name not in self.spec.typed or name not in self.spec.grading:
                continue
            value = self.spec.grading[name]
            if isinstance(value, bool):
                flags += [options.flag_of(name)] if value else []
            else:
                flags += [options.flag_of(name), str(value)]
        return shlex.join([f"{self.suite.name}-grade", str(self.run_dir), *flags])


def prepare(spec: RunSpec, prog: str, argv: Sequence[str]) -> PreparedRun:
    """Check the run and everything it needs; an :class:`InputError` names what is wrong.

    Each check works on what the ones before it settled, a cheap one before a costly one:
    the flags, the run folder (a resumed run's defining fields come from its manifest
    there), the scripted model and the web archive, the backend's build, the tasks, the
    model, the prompt and the suite's own fields, the grader. A new run's folder is made
    last, once every check passed."""
    spec = spec.model_copy(deep=True)
    suite = suite_def(spec.suite)
    definition = backend_def(spec.runner)
    options = definition.options.parse(spec.backend, f"{prog} options")
    _check_runner_flags(spec, prog, suite, definition)
    command = [prog, *argv]
    run_dir, lock, manifest = _run_folder(spec, command, suite, definition, options)
    spec.repeat = spec.repeat or 1
    scripted_model = _scripted_model(spec, suite)
    web_archive = _check_web(spec, prog)
    prices = load_price_table(Path(spec.prices) if spec.prices else None)
    resumed_settings = manifest.settings.get("backend", {}) if manifest is not None else None
    request = BuildRequest(spec, options, suite, scripted_model, resumed_settings)
    backend = _build_backend(definition, request)
    if manifest is not None:
        loaded, tasks = _reload_tasks(suite, manifest)
    else:
        loaded, tasks = load_selected(suite, spec)
        if not tasks:
            raise InputError("the selection is empty: no task to run")
        _fill_new_run_defaults(spec, suite, definition)
    model = _model_of(backend, scripted_model, manifest, run_dir)
    _settle_prompt(spec, suite, backend.name, model, resumed=manifest is not None)
    _check_suite_fields(spec, suite, backend, prog)
    predictions_path = run_dir / "predictions.jsonl"
    # Last of the checks, after the run's own fields: nothing has started yet.
    grader = _end_grader(suite, spec, predictions_path, tasks, prog) if spec.grade else None
    plan, warnings = _plan(predictions_path, tasks, spec)
    prepared = PreparedRun(
        spec=spec,
        prog=prog,
        argv=list(argv),
        suite=suite,
        definition=definition,
        backend=backend,
        run_dir=run_dir,
        manifest=manifest,
        loaded=loaded,
        tasks=tasks,
        plan=plan,
        mode=_mode(spec, scripted_model),
        scripted_model=scripted_model,
        model=model,
        prices=prices,
        grader=grader,
        empty_retry=_empty_retry_on(spec, suite, definition, manifest),
        web_archive=web_archive,
        warnings=warnings,
        lock=lock,
    )
    if lock is None:  # a new folder: made last, once every check passed
        _claim_new_folder(prepared, command)
    return prepared


def _check_runner_flags(spec: RunSpec, prog: str, suite: SuiteDef, definition: BackendDef) -> None:
    """Flags this runner cannot honour, or that name nothing, refused before anything else."""
    if spec.user_agent is not None and not definition.user_agent:
        raise InputError(
            f"--user-agent: {prog} cannot set the browser's User-Agent ({suite.name}-run "
            f"and {suite.name}-ab-run can)"
        )
    if spec.prompt is not None and spec.prompt not in PROMPT_NAMES:
        raise InputError(f"--prompt {spec.prompt}: no such prompt ({', '.join(PROMPT_NAMES)})")


def _run_folder(
    spec: RunSpec, command: list[str], suite: SuiteDef, definition: BackendDef, options: Options
) -> tuple[Path, FolderLock | None, Manifest | None]:
    """The run's folder, its lock when it is taken already, and the manifest of a resumed
    run (None: a new run)."""
    if spec.resume is None:
        run_dir, lock = _new_folder(spec, command, suite, definition, options)
        return run_dir, lock, None
    run_dir = spec.resume.absolute()
    lock, manifest = _resume_folder(run_dir, spec, command, suite, definition, options)
    return run_dir, lock, manifest


def _resume_folder(
    run_dir: Path,
    spec: RunSpec,
    command: list[str],
    suite: SuiteDef,
    definition: BackendDef,
    options: Options,
) -> tuple[FolderLock | None, Manifest]:
    """A resumed run's folder locked, and its manifest; the run's defining fields (the
    spec's, the backend's options', the suite's own) take the manifest's values."""
    typed = set(spec.typed)
    # Locked before its rows are read: a run still writing there refuses this one.
    lock = lock_folder(run_dir, command) if run_dir.is_dir() else None
    manifest = _load_resumable(run_dir, suite, spec)
    _apply_stored_fields(spec, options, manifest.settings.get("flags", {}), definition, typed)
    _apply_stored_suite_options(spec, suite, manifest, typed)
    return lock, manifest


def _new_folder(
    spec: RunSpec, command: list[str], suite: SuiteDef, definition: BackendDef, options: Options
) -> tuple[Path, FolderLock | None]:
    """A new run's folder, not made yet; the ``--out-dir`` the user named is checked to
    hold no run, and locked already when it exists."""
    if not spec.retry_errors:
        raise InputError("--no-retry-errors only applies with --resume")
    # Absolute: each agent runs in its attempt folder, so relative paths would break.
    run_dir = (spec.out_dir or definition.run_dir(suite, options)).absolute()
    if spec.out_dir is None:
        # A stamped name, which a run started in the same second may hold already: not this
        # run's to resume, so not refused; the claim, made last, takes the next free name.
        return run_dir, None
    lock: FolderLock | None = None
    if run_dir.is_dir():
        # Locked first: a run still writing there is named as such, not as a run to resume.
        lock = lock_folder(run_dir, command)
    try:
        _refuse_held_run(run_dir)
    except InputError:
        if lock is not None:
            lock.release()
        raise
    return run_dir, lock


def _scripted_model(spec: RunSpec, suite: SuiteDef) -> str | None:
    """The scripted model of a run without a provider, when its suite can play the model
    itself (localweb); ``--scripted-model`` anywhere else is refused."""
    if suite.scripted_model is not None and spec.provider is None:
        if spec.backend.get("base_url") is None:
            return spec.scripted_model or suite.scripted_model
        return None
    if spec.scripted_model is not None:
        raise InputError(
            f"--scripted-model {spec.scripted_model}: only a suite that plays the model itself "
            "(localweb, without --provider) has a scripted model"
        )
    return None


def _mode(spec: RunSpec, scripted_model: str | None) -> Mode:
    if scripted_model or spec.scaffold:
        return "scaffold"
    if spec.web == "replay":
        return "recorded"  # a real model on the recorded web
    return "live"


def _build_backend(definition: BackendDef, request: BuildRequest) -> Backend:
    """The run's backend. Built before the tasks load: its own options, keys and programs
    are checked first, so a bad flag is named before a dataset is fetched (or refused for
    want of a token). The spec keeps the options as the build resolved them."""
    backend = definition.build(request)
    spec = request.spec
    spec.backend = request.options.model_dump(mode="json", exclude_none=True)
    if budget_of(spec).any():
        refuse_unmetered(backend, "--max-steps, --max-tokens, --max-cost-usd and --temperature")
    return backend


def _fill_new_run_defaults(spec: RunSpec, suite: SuiteDef, definition: BackendDef) -> None:
    """A new run's defaults, written into its spec (a resumed run keeps what its manifest
    says, defaults included)."""
    spec.timeout = spec.timeout or definition.timeout_for(suite)
    if spec.memory_max_mb is None:
        spec.memory_max_mb = definition.default_memory_max_mb
    if spec.resource_sample_ms is None:
        spec.resource_sample_ms = DEFAULT_RESOURCE_SAMPLE_MS


def _model_of(
    backend: Backend, scripted_model: str | None, manifest: Manifest | None, run_dir: Path
) -> str | None:
    """The model the run's program runs: given, or the program's own default where the
    backend knows it; a resumed run's must be the one it started with.

    A scripted model is named as such in the manifest and never priced, whatever id the
    driven program had to be given (Claude Code insists on a real model id)."""
    settings = backend.settings()
    model = scripted_model or settings.get("model") or settings.get("default_model")
    if manifest is not None and manifest.model != model:
        raise InputError(
            f"--resume {run_dir}: the model was {manifest.model!r} when the run started and "
            f"is {model!r} now (an environment default such as AI_GATEWAY_MODEL changed?); "
            "restore it or start a new run"
        )
    return model


def _settle_prompt(
    spec: RunSpec, suite: SuiteDef, backend_name: str, model: str | None, resumed: bool
) -> None:
    """``spec.prompt``: the prompt variant given, else the default for this stack and
    model; checked against the suite's prompts."""
    if spec.prompt is None and resumed:
        spec.prompt = STANDARD  # a run started before the variants ran the suite's own
    elif spec.prompt is None:
        assert suite.prompt is not None
        spec.prompt = default_prompt_name(suite.prompt, backend_name, model)
    if suite.prompt is not None:
        try:
            prompt_variant(suite.prompt, spec.prompt)
        except ValueError as exc:
            raise InputError(f"--prompt {spec.prompt}: {exc}") from None


def _check_suite_fields(spec: RunSpec, suite: SuiteDef, backend: Backend, prog: str) -> None:
    """The suite's own fields, and the suite's own check of the run as the backend will
    run it."""
    suite_options(suite).parse(spec.suite_options, f"{prog} options").check()
    if suite.check is not None:
        load_ref(suite.check)(spec, backend)


def _plan(predictions_path: Path, tasks: Sequence[Task], spec: RunSpec) -> tuple[Plan, list[str]]:
    """The attempts left to run (a resumed run's rows settle some), and what its rows and
    the temp root warn of."""
    # Streamed: a resumed run's rows may hold gigabytes of traces; the plan keeps statuses.
    existing = PredictionsStream(predictions_path) if predictions_path.exists() else []
    plan = plan_attempts(
        [t.id for t in tasks], spec.repeat, existing, retry_errors=spec.retry_errors
    )
    warnings = []
    if isinstance(existing, PredictionsStream):
        warnings = [f"{w}; it is set aside to predictions.jsonl.torn" for w in existing.warnings()]
    if (temp_warning := temp_root_warning()) is not None:
        warnings.append(temp_warning)
    return plan, warnings


def _empty_retry_on(
    spec: RunSpec, suite: SuiteDef, definition: BackendDef, manifest: Manifest | None
) -> bool:
    """Whether an empty answer runs once more: the suite's and runner's method unless
    ``--no-empty-retry``."""
    if manifest is not None and not manifest.settings.get("empty_retry", {}).get("on"):
        return False  # a run started without it (or before it existed) stays so
    return suite.retry_empty_once and definition.empty_retry and not spec.no_empty_retry


def _claim_new_folder(prepared: PreparedRun, command: list[str]) -> None:
    """Make and lock a new run's folder. Another run started in the same second may have
    taken its name first: this run then moves to the folder it claimed."""
    p = prepared
    claimed, p.lock = _claim(p.run_dir, p.spec.out_dir is not None, command)
    if claimed == p.run_dir:
        return
    p.warnings.append(
        f"{p.run_dir.name} was taken by another run started in the same second: this "
        f"run's folder is {claimed.name}"
    )
    p.run_dir = claimed
    if p.grader is not None:  # checked already; its files go in the folder claimed
        p.grader = make_grader(p.suite, p.spec.grading, p.predictions_path)


def budget_of(spec: RunSpec) -> Budget:
    """The run's one budget (its flags)."""
    return Budget(spec.max_steps, spec.max_tokens, spec.max_cost_usd, spec.temperature)


def refuse_unmetered(backend: Backend, what: str) -> None:
    """An :class:`InputError` when the harness's model meter cannot stand between the
    backend's agent and its model, which ``what`` needs."""
    problem = getattr(backend, "meter_problem", None)
    reason = problem() if problem is not None else f"{backend.name} has no model endpoint"
    if reason is not None:
        raise InputError(f"{what} need the harness's model meter: {reason}")


def _refuse_held_run(run_dir: Path) -> None:
    """A new run's folder must not hold a run already."""
    if (run_dir / "predictions.jsonl").exists() or (run_dir / "manifest.json").exists():
        raise InputError(
            f"{run_dir} already holds a run; continue it with --resume {run_dir}, "
            "or choose another --out-dir"
        )


def _claim(run_dir: Path, named: bool, argv: list[str]) -> tuple[Path, FolderLock]:
    """A new run's folder, made and locked: the folder the user named (``--out-dir``), or
    the default stamped one, suffixed when another run took that name first."""
    if not named:
        return claim_new_folder(run_dir, argv)
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(run_dir, argv, made=made)
    try:
        _refuse_held_run(run_dir)  # again, now that no other run can be writing there
    except InputError:
        lock.release()
        raise
    return run_dir, lock


@dataclass
class OpenRun:
    """A run whose services are up and whose manifest is written: attempts can start."""

    prepared: PreparedRun
    manifest: Manifest
    session: TaskSession
    runner: AttemptRunner
    this_session: RunSession


def session_factory(prepared: PreparedRun) -> SessionFactory:
    """The session a run runs in: the suite's own (localweb's site), the backend's for the
    dataset suites (agent-browser chat's prompt), else the dataset session."""
    if prepared.suite.session is not None:
        return load_ref(prepared.suite.session)
    if prepared.definition.dataset_prompt is not None:
        return prompted_session(prepared.definition.dataset_prompt)
    return dataset_session


@contextmanager
def open_run(
    prepared: PreparedRun, console: Console, executor_info: dict[str, Any] | None = None
) -> Iterator[OpenRun]:
    """Start the run's services, write its manifest (a new one, or this session added to a
    resumed one) and build the attempt runner; the services stop on leaving."""
    p = prepared
    spec = p.spec
    for warning in p.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    factory = session_factory(p)
    with (
        web_proxy(p) as web,
        factory(p.suite, spec, p.mode, p.scripted_model, p.backend) as session,
        model_meter(p, session) as meter,
    ):
        sha, dirty = git_state()
        this_session = RunSession(
            started_at=utc_now(),
            argv=redact_argv([p.prog, *p.argv]),
            planned=len(p.plan.todo),
            retried=p.plan.retried,
            git_sha=sha,
            git_dirty=dirty,
        )
        manifest = p.manifest
        if manifest is None:
            p.run_dir.mkdir(parents=True, exist_ok=True)
            manifest = _new_manifest(p, session)
        else:
            _check_backend_unchanged(manifest, p.backend, p.run_dir)
            _check_prompt_unchanged(manifest, session, p.run_dir)
            if web is not None:
                manifest.settings.setdefault("web", {}).setdefault("sessions", []).append(
                    web_settings(p, web)
                )
        if executor_info is not None:
            manifest.settings.setdefault("executors", []).append(executor_info)
        manifest.sessions.append(this_session)
        write_manifest(p.run_dir, manifest)
        _announce(console, p.suite, manifest, p.plan, p.run_dir)
        runner = AttemptRunner(
            run_dir=p.run_dir,
            tasks={t.id: t for t in p.tasks},
            session=session,
            backend=p.backend,
            timeout_s=spec.timeout,
            memory_max_mb=spec.memory_max_mb or None,
            prices=p.prices,
            price_model=None if getattr(p.backend, "prices_own_rows", False) else p.model,
            retry_empty=p.empty_retry,
            web=web,
            meter=meter,
            sample_interval_s=(spec.resource_sample_ms or 0) / 1000 or None,
        )
        yield OpenRun(p, manifest, session, runner, this_session)


# What the manifest says of the model meter, when a run has one.
METER_DESCRIPTION = (
    "every model request of every attempt went through the harness's model meter (a "
    "pass-through on this machine, episode/meter.py): it reads each reply's tool calls and "
    "tokens to enforce the run's budget, sets its temperature, and is where an episode's "
    "fault fires; replies reach the agent whole, not streamed piece by piece"
)


@contextmanager
def model_meter(p: PreparedRun, session: TaskSession) -> Iterator[ModelMeter | None]:
    """The run's model meter, when its budget or its episodes' faults need one."""
    budget = budget_of(p.spec)
    faulted = bool(getattr(session, "episode_faults", False))
    if not (budget.any() or faulted):
        yield None
        return
    if faulted:
        refuse_unmetered(p.backend, "episode faults (--fault)")
    with ModelMeter(budget, p.prices, host=p.spec.executor.service_host) as meter:
        yield meter


def close_run(run: OpenRun, outcome: RunOutcome) -> None:
    """Record the session's end in the manifest."""
    this_session = run.this_session
    this_session.finished_at = utc_now()
    this_session.completed = outcome.written
    this_session.interrupted = outcome.interrupted
    this_session.wall_seconds = round(outcome.wall_seconds, 3)
    this_session.busy_seconds = round(outcome.busy_seconds, 3)
    this_session.agent_seconds = round(outcome.agent_seconds, 3)
    manifest = run.manifest
    manifest.sessions[-1] = this_session
    manifest.finished_at = this_session.finished_at
    # What the backend learned only by running joins its settings (Claude Code: the model
    # id an alias such as `sonnet` resolved to).
    learned = getattr(run.prepared.backend, "learned_settings", None)
    if learned is not None:
        merge_learned(manifest.settings.setdefault("backend", {}), learned())
    archive = run.prepared.web_archive
    if archive is not None and run.prepared.spec.web == "record":
        # What this session's recording left in the archive (a replay leaves it unchanged).
        manifest.settings.setdefault("web", {})["archive_after"] = archive.describe()
    write_manifest(run.prepared.run_dir, manifest)


def _check_web(spec: RunSpec, prog: str) -> WebArchive | WaczArchive | None:
    """The archive of ``--web record|replay``, checked; None for the live web."""
    if spec.web_trust and spec.web != "record":
        raise InputError(
            "--web-trust: only a recording checks certificates (--web record ARCHIVE); "
            f"this run's web is {spec.web or 'live'}"
        )
    for path in spec.web_trust:
        try:
            ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"--web-trust {path}: not a PEM file of CA certificates ({exc})"
            ) from None
    if spec.web in (None, "live"):
        return None
    assert spec.web_archive is not None
    archive = open_archive(Path(spec.web_archive))
    if spec.web == "replay":
        archive.check_replayable()
    else:
        archive.check_recordable()
    return archive


@contextmanager
def web_proxy(p: PreparedRun) -> Iterator[WebProxy | None]:
    """The run's recording or replaying proxy, for the life of the run (None: live)."""
    if p.web_archive is None:
        yield None
        return
    assert p.spec.web in ("record", "replay")
    routing = getattr(p.backend, "web_routing", None)
    if routing is None:
        raise InputError(
            f"--web {p.spec.web}: {p.prog} ({p.backend.name}) cannot send its browser's "
            "traffic through the web archive's proxy"
        )
    try:
        # A Chromium stack trusts the archive's CA from an NSS database the run makes.
        nss_db = getattr(p.backend, "web_nss_db", False)
        with WebProxy(
            p.spec.web,
            p.web_archive,
            host=p.spec.executor.service_host,
            nss_db=nss_db,
            trust=[Path(path) for path in p.spec.web_trust],
        ) as proxy:
            yield proxy
    except ProxyFailed as exc:
        raise InputError(f"--web {p.spec.web} {p.web_archive.root}: {exc}") from None


def web_manifest(p: PreparedRun) -> dict[str, Any]:
    """``settings.web`` of a new run's manifest."""
    if p.web_archive is None:
        return {"mode": "live"}
    return {
        "mode": p.spec.web,
        "archive": p.web_archive.describe(),
        "proxy": WEB_PROXY_DESCRIPTION,
        "routing": getattr(p.backend, "web_routing", None),
        "rules_sha256": rules_sha256(),
        **_trusted(p),
    }


def web_settings(p: PreparedRun, web: WebProxy) -> dict[str, Any]:
    """What a resumed session records of the archive it ran on."""
    assert p.web_archive is not None
    return {"mode": web.mode, "archive": p.web_archive.describe(), **_trusted(p)}


def _trusted(p: PreparedRun) -> dict[str, Any]:
    """A recording's trust: the system's store and the --web-trust files, by content."""
    if p.spec.web != "record":
        return {}
    extra = [{"path": path, "sha256": sha256_file(Path(path))} for path in p.spec.web_trust]
    return {"trusted": {"system": ssl.get_default_verify_paths().cafile, "extra": extra}}


def make_executor(spec: RunSpec, owner: Path | None = None) -> Executor:
    """The executor the spec names, for the run (or sweep) in folder ``owner``."""
    if spec.executor.kind == "ray":
        from agent_benchmarks.runner.ray_executor import RayExecutor

        key = run_key(owner) if owner is not None else None
        return RayExecutor(spec.workers, address=spec.executor.address, owner=key)
    return LocalPool(spec.workers)


def attach_executor(executor: Executor, prepared: PreparedRun) -> dict[str, Any]:
    """Ready ``prepared`` to run on ``executor`` (entered): the machines attempts will run
    on hold the programs the backend checked here, and the run's services listen where
    they reach them. What the manifest records of the executor."""
    probe = getattr(prepared.backend, "program_probe", None)
    if probe is not None:
        executor.check_programs(prepared.backend.programs(), probe())
    else:
        executor.check_programs({}, None)
    prepared.warnings.extend(executor.left_out())
    prepared.spec.executor.service_host = executor.service_host
    return executor.describe()


def launch(spec: RunSpec, prog: str, argv: Sequence[str]) -> int:
    """One run, start to end: its exit status (0 done, 1 every attempt failed or grading
    failed, 130 interrupted)."""
    console = Console(stderr=True, soft_wrap=True)
    if (definition := backend_def(spec.runner)).inform is not None:
        status = _inform(definition, spec)
        if status is not None:
            return status
    prepared = prepare(spec, prog, argv)
    try:
        return _run(prepared, console)
    finally:
        release(prepared)


def release(prepared: PreparedRun) -> None:
    """Let go of the run's folder (the run has ended, or never started)."""
    if prepared.lock is not None:
        prepared.lock.release()


def _run(prepared: PreparedRun, console: Console) -> int:
    """Run a prepared run's attempts, sizing the pool first under ``--workers auto``."""
    from agent_benchmarks.runner.engine import execute

    sizing = None
    if prepared.spec.workers_auto:
        sizing = PoolSizing(prepared.spec, prepared.run_dir, prepared.backend.name)
        if not sizing.probe_needed:
            prepared.spec.workers = sizing.workers(len(prepared.plan.todo))
            console.print(f"--workers auto: {prepared.spec.workers} worker(s) ({sizing.summary()})")
    executor = make_executor(prepared.spec, prepared.run_dir)
    with executor, open_run(prepared, console, attach_executor(executor, prepared)) as run:
        todo = prepared.plan.todo
        if sizing is not None and sizing.probe_needed and len(todo) > 1:
            outcome = _probe_then_sized(prepared, run, executor, console, sizing)
        else:
            outcome = execute(
                todo, run.runner, executor, prepared.predictions_path, prepared.suite.title, console
            )
        if sizing is not None:
            if not sizing.record:  # at most one attempt to run: it was the probe, alone
                sizing.measure_probe(PredictionsStream(prepared.predictions_path))
                sizing.workers(len(todo))
            run.manifest.settings["workers_auto"] = sizing.record
            if prepared.manifest is None:  # a new run: its workers are the pool's
                run.manifest.workers = prepared.spec.workers
        close_run(run, outcome)
    return conclude(console, prepared, outcome)


def _probe_then_sized(
    prepared: PreparedRun, run: OpenRun, probe: Executor, console: Console, sizing: PoolSizing
) -> RunOutcome:
    """``--workers auto`` with no measured attempt of the stack: the first attempt runs
    alone on ``probe`` (one worker), and its figures size the pool for the rest."""
    from agent_benchmarks.runner.engine import execute

    todo, title, path = prepared.plan.todo, prepared.suite.title, prepared.predictions_path
    first = execute(todo[:1], run.runner, probe, path, title, console)
    if first.interrupted:
        return first
    sizing.measure_probe(PredictionsStream(path))
    prepared.spec.workers = sizing.workers(len(todo) - 1)
    console.print(f"--workers auto: {prepared.spec.workers} worker(s) ({sizing.summary()})")
    with make_executor(prepared.spec, prepared.run_dir) as rest:
        return first.then(execute(todo[1:], run.runner, rest, path, title, console))


def _inform(definition: BackendDef, spec: RunSpec) -> int | None:
    """The backend's informational option (--list-tools), answered before anything loads."""
    assert definition.inform is not None
    options = definition.options.parse(spec.backend, "options")
    suite = suite_def(spec.suite)
    resumed: dict[str, Any] | None = None
    if spec.resume is not None:
        manifest = read_manifest(spec.resume) if spec.resume.is_dir() else None
        resumed = manifest.settings.get("backend", {}) if manifest is not None else {}
    return definition.inform(BuildRequest(spec, options, suite, None, resumed))


def merge_learned(backend_settings: dict[str, Any], learned: dict[str, Any]) -> None:
    """Add what this session learned to the manifest's backend settings; a list keeps what
    earlier sessions of the run learned too (a resumed run's model ids are all its ids)."""
    for key, value in learned.items():
        before = backend_settings.get(key)
        if isinstance(value, list) and isinstance(before, list):
            value = sorted(set(before) | set(value))
        backend_settings[key] = value


def _end_grader(
    suite: SuiteDef, spec: RunSpec, predictions_path: Path, tasks: Sequence[Task], prog: str
) -> Grader:
    """The grader a run ends with, built before its first task, so that what would make the
    grade fail after the last task (a judge without its API key, bad judge settings, tasks
    with no gold answer to grade against) stops the run before it starts."""
    grader = make_grader(suite, spec.grading, predictions_path)
    no_gold = [t.id for t in tasks if t.gold is None] if grader.needs_gold else []
    if no_gold:
        raise InputError(
            f"{prog} grades at the end against gold answers, and {len(no_gold)} selected "
            f"task(s) have none (e.g. {no_gold[0]!r}; a test split keeps its answers hidden): "
            "pass --no-grade"
        )
    readiness_problem = getattr(grader, "readiness_problem", None)
    problem = readiness_problem() if readiness_problem is not None else None
    if problem is not None:
        raise InputError(
            f"{prog} grades at the end with {problem}: set it, or pass --no-grade and grade "
            f"later with {suite.name}-grade RUN_DIR"
        )
    return grader


def _new_manifest(p: PreparedRun, session: TaskSession) -> Manifest:
    spec = p.spec
    options = p.definition.options
    defining = {name: spec.backend.get(name) for name in options.run_defining()}
    flags = {name: getattr(spec, name) for name in RUN_FIELDS} | defining
    manifest = build_manifest(
        suite=p.suite.name,
        loaded=p.loaded,
        task_ids=[t.id for t in p.tasks],
        selection=spec.selection.recorded(),
        backend=p.backend.name,
        mode=p.mode,
        argv=[p.prog, *p.argv],
        provider=p.backend.settings().get("provider"),
        model=p.model,
        programs=p.backend.programs(),
        workers=spec.workers,
        timeout_s=spec.timeout,
        repeat=spec.repeat or 1,
        spec=spec.model_dump(mode="json"),
        settings={
            "flags": flags,
            "backend": p.backend.settings(),
            "session": session.settings(),
            "prices": {"version": p.prices.version, "source": p.prices.source},
            **({"isolation": p.definition.isolation} if p.definition.isolation else {}),
            "memory_cap": _memory_cap(spec.memory_max_mb),
            "empty_retry": _empty_retry(p.suite, p.definition, p.empty_retry),
            "web": web_manifest(p),
            "budgets": budget_record(budget_of(spec), p.backend.settings().get("budgets")),
            **({"model_meter": METER_DESCRIPTION} if _metered(p, session) else {}),
            "resources": resources_manifest(spec),
        },
    )
    manifest.machine = this_machine()
    return manifest


def _metered(p: PreparedRun, session: TaskSession) -> bool:
    return budget_of(p.spec).any() or bool(getattr(session, "episode_faults", False))


def conclude(console: Console, p: PreparedRun, outcome: RunOutcome) -> int:
    """Report the session's end, grade the run if asked, and say the exit status."""
    c = outcome.counts
    console.print(
        f"{outcome.written} attempt(s) in {outcome.wall_seconds:.1f}s: ok {c['ok']}, "
        f"empty {c['empty']}, "
        + (f"budget {c['budget']}, " if c["budget"] else "")
        + f"timeout {c['timeout']}, error {c['error']} → {p.run_dir}"
    )
    if outcome.contaminated:
        console.print(
            f"[bold red]CONTAMINATED: {len(outcome.contaminated)} attempt(s) called tools "
            f"outside the browser MCP server[/] ({', '.join(outcome.contaminated[:5])}); "
            "their rows list the calls in details.foreign_calls and scores.json reports "
            "accuracy without them"
        )
    if outcome.interrupted:
        console.print(f"[yellow]interrupted.[/] continue with: {p.prog} --resume {p.run_dir}")
        return 130
    injected = c[INJECTED_FAULT]
    if injected:
        console.print(
            f"{injected} attempt(s) ended with the run's injected fault (error_class "
            f"{INJECTED_FAULT}): what the run measures; a resume does not retry them"
        )
    # Every attempt failing is the run's failure (exit 1), but it is graded all the same:
    # an attempt that printed an answer before it failed is graded on it, as upstream does.
    failed = c["timeout"] + c["error"] - injected
    all_failed = bool(outcome.written) and failed == outcome.written
    if all_failed:
        console.print(
            "[red]every attempt failed with an infrastructure error[/] (see the rows' "
            f"error and stderr_tail); retry them with: {p.prog} --resume {p.run_dir}"
        )
    grade_later = p.grade_later()
    if p.grader is None:
        console.print(f"not graded (--no-grade); grade with: {grade_later}")
        return 1 if all_failed else 0
    try:
        scores = grade_and_report(p.grader, p.predictions_path)
    except (InputError, OSError) as exc:
        console.print(
            f"[red]grading failed:[/] {exc}\nthe run folder is complete ({p.run_dir}); grade "
            f"it with: {grade_later}"
        )
        return 1
    unjudged = _judge_calls_failed(scores)
    if unjudged:
        console.print(
            f"[red]grading incomplete:[/] the judge's API gave no reply for {unjudged} "
            "attempt(s) (see details.judge_problem in scores.json); the run folder is "
            f"complete ({p.run_dir}); grade again with: {grade_later} (verdicts already "
            "given are cached)"
        )
        return 1
    return 1 if all_failed else 0


def _judge_calls_failed(scores: Scores) -> int:
    """Attempts an LLM judge could not judge because its API gave no reply (none without a
    judge): counted INVALID under upstream's protocol, ``judge_error`` under the strict one."""
    return (scores.grader.get("judged") or {}).get("n_call_failed", 0)


def _announce(
    console: Console, suite: SuiteDef, manifest: Manifest, plan: Plan, run_dir: Path
) -> None:
    n_tasks = len(manifest.task_ids)
    what = f"{suite.title}: {n_tasks} task(s) × {manifest.repeat}"
    if plan.settled or plan.retried or plan.kept_failures:
        what += (
            f"; resuming: {plan.settled} done, {plan.retried} to retry, "
            f"{plan.kept_failures} failure(s) kept"
        )
    console.print(
        f"{what}; {len(plan.todo)} attempt(s) to run, {manifest.workers} worker(s), "
        f"timeout {manifest.timeout_s:g}s, mode {manifest.mode} → {run_dir}"
    )
    session = manifest.settings.get("session")
    fault = session.get("fault") if isinstance(session, dict) else None
    if isinstance(fault, dict):
        when = f" at {fault['at']}" if fault.get("at") else " (the paired clean run)"
        console.print(f"fault: {fault.get('kind')}{when}", markup=False)
    if manifest.mode == "scaffold":
        console.print(
            "[yellow]scaffold run:[/] the model is a scripted test double; these numbers "
            "test the browser stack and the harness, they are not a benchmark result"
        )


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    write_json_atomic(run_dir / "manifest.json", manifest.model_dump_json(indent=2) + "\n")


def _load_resumable(run_dir: Path, suite: SuiteDef, spec: RunSpec) -> Manifest:
    if not run_dir.is_dir():
        raise InputError(f"--resume {run_dir}: no such run folder")
    manifest = read_manifest(run_dir)
    if manifest is None:
        raise InputError(f"--resume {run_dir}: no manifest.json there, so not a run folder")
    if manifest.suite != suite.name:
        raise InputError(f"--resume {run_dir}: a {manifest.suite} run, not {suite.name}")
    _check_selection_unchanged(manifest, spec, run_dir)
    return manifest


def _changed(flag: str, given: Any, kept: Any, what: str) -> InputError:
    return InputError(
        f"--{flag.replace('_', '-')} {_typed(given)}: this run was started with "
        f"{_shown(kept)}; {what} (start a new run to change it)"
    )


def _typed(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return repr(value) if isinstance(value, str) else str(value)


def _check_selection_unchanged(manifest: Manifest, spec: RunSpec, run_dir: Path) -> None:
    """Selection fields given with ``--resume`` must say what the manifest says."""
    keeps = f"a resumed run keeps the tasks its manifest lists ({run_dir}/manifest.json)"
    defaults = {"sample_seed": 0, "skip_attachments": False}
    typed = set(spec.typed)
    for name in SELECTION_FIELDS:
        if name not in typed:
            continue
        given = getattr(spec.selection, name)
        kept = manifest.selection.get(name, defaults.get(name))
        if name == "task_ids" and given and kept:  # either form of a WebBench id
            same = [current_task_id(manifest.suite, i) for i in given] == [
                current_task_id(manifest.suite, i) for i in kept
            ]
        else:
            same = given == kept
        if not same:
            raise _changed(name, given, kept, keeps)
    if "split" in typed and spec.split != manifest.split:
        raise _changed("split", spec.split, manifest.split, keeps)
    if "revision" in typed and spec.revision != manifest.dataset.revision:
        raise _changed("revision", spec.revision, manifest.dataset.revision, keeps)
    if "dataset_file" in typed and spec.dataset_file is not None:
        given_path = spec.dataset_file.resolve()
        source = manifest.dataset
        kept_path = Path(source.path).resolve() if source.kind == "file" and source.path else None
        if given_path != kept_path:
            kept = str(kept_path) if kept_path else f"the {source.kind} dataset"
            raise InputError(
                f"--dataset-file {spec.dataset_file}: this run was started with {kept}; "
                f"{keeps} (start a new run to change it)"
            )
        if not given_path.is_file() or sha256_file(given_path) != source.sha256:
            raise InputError(
                f"--dataset-file {spec.dataset_file}: the file changed since this run started "
                f"(sha256 {source.sha256} then); restore it or start a new run"
            )


def _apply_stored_fields(
    spec: RunSpec,
    options: Options,
    stored: dict[str, Any],
    definition: BackendDef,
    typed: set[str],
) -> None:
    """A resumed run's defining fields, shared and the backend's, take the manifest's
    values; one given again with another value is refused, naming it."""
    for name in RUN_FIELDS:
        _keep(name, getattr(spec, name), stored, typed, lambda v, n=name: setattr(spec, n, v))
    for name in definition.options.run_defining():
        _keep(name, getattr(options, name), stored, typed, lambda v, n=name: setattr(options, n, v))


def _apply_stored_suite_options(
    spec: RunSpec, suite: SuiteDef, manifest: Manifest, typed: set[str]
) -> None:
    """A resumed run keeps the suite's own fields it started with (localweb's faults), from
    its stored spec; one given again with another value is refused. A run from before the
    spec was stored keeps what is given."""
    if manifest.spec is None:
        return
    stored = manifest.spec.get("suite_options") or {}
    values = spec.suite_options

    def put(name: str, value: Any) -> None:
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value

    for name in suite_options(suite).run_defining():
        _keep(name, values.get(name), stored, typed, lambda v, n=name: put(n, v))


def _keep(name: str, given: Any, stored: dict[str, Any], typed: set[str], put: Any) -> None:
    given = str(given) if isinstance(given, Path) else given
    kept = stored.get(name)
    if name in typed and given is not None and given != kept:
        raise _changed(name, given, kept, "a resumed run keeps its settings")
    put(kept)


def _empty_retry(suite: SuiteDef, definition: BackendDef, on: bool) -> dict[str, Any]:
    if on:
        return {
            "on": True,
            "how": "an attempt whose answer is empty, that neither timed out nor was refused "
            "for safety, runs once more; the retry is kept only if it answered; the row's "
            "duration is both attempts' and details.retried says so (upstream's GAIA native)",
        }
    why = (
        "--no-empty-retry"
        if suite.retry_empty_once and definition.empty_retry
        else "not this suite and runner's method"
    )
    return {"on": False, "why": why}


def _memory_cap(memory_max_mb: int | None) -> dict[str, Any]:
    if not memory_max_mb:
        return {"max_mb": None}
    return {
        "max_mb": memory_max_mb,
        "method": memory_cap_method(),
        "how": "per attempt: a cgroup of its own (its memory limit, and no swap where the "
        "cgroup has a swap limit) when one can be made, else RLIMIT_DATA on each process; "
        "upstream wrapped lightpanda in systemd-run --scope (MemoryMax, MemorySwapMax=0)",
    }


def _check_backend_unchanged(manifest: Manifest, backend: Backend, run_dir: Path) -> None:
    before = manifest.programs
    for name, value in backend.programs().items():
        if name in before and before[name] != value:
            raise InputError(
                f"--resume {run_dir}: {name} was {before[name]!r} when the run started and is "
                f"{value!r} now; finish it with the same build or start a new run"
            )


def _check_prompt_unchanged(manifest: Manifest, session: TaskSession, run_dir: Path) -> None:
    before = manifest.settings.get("session", {}).get("system_prompt_sha256")
    now = session.settings()["system_prompt_sha256"]
    if before is not None and before != now:
        raise InputError(
            f"--resume {run_dir}: the system prompt (--prompt or --system-prompt-file) changed "
            f"since the run started (sha256 {before[:12]}... then, {now[:12]}... now); "
            "restore it or start a new run"
        )


def _reload_tasks(suite: SuiteDef, manifest: Manifest) -> tuple[LoadedDataset, list[Task]]:
    source = manifest.dataset
    if source.kind == "bundled":
        if suite.bundled is not None:
            loaded = suite.bundled()
        else:  # a copy of a Hub table shipped in the package (WebBench)
            assert suite.dataset is not None
            loaded = load_dataset_bundled(suite.dataset, manifest.split)
        if loaded.source.sha256 != source.sha256:
            raise InputError(
                f"the {suite.name} tasks changed since this run started (digest "
                f"{source.sha256} then, {loaded.source.sha256} now); start a new run"
            )
    else:
        assert suite.dataset is not None
        path = Path(source.path) if source.kind == "file" and source.path else None
        if path is not None and path.exists() and sha256_file(path) != source.sha256:
            raise InputError(f"{path}: the dataset file changed since this run started")
        loaded = load_tasks(
            suite.dataset,
            split=manifest.split,
            dataset_file=path,
            config=source.config,
            revision=source.revision,
        )
    by_id = {t.id: t for t in loaded.tasks}
    missing = [i for i in manifest.task_ids if i not in by_id]
    if missing:
        raise InputError(
            f"{len(missing)} task(s) of the run are not in the dataset any more: {missing[:5]}"
        )
    return loaded, [by_id[i] for i in manifest.task_ids]
