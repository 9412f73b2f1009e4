"""``<suite>-run``: the command every runner shares, from flags to a graded run folder.

A backend plugs in through a :class:`BackendCLI` (its flags, its config record, how to
build it); a suite through its :class:`~agent_benchmarks.suite.SuiteDef` and, when it
needs run-scoped services, a session factory. Everything else is here once: selection,
the run folder, the manifest, ``--resume``, the engine, grading at the end.

A run's defining flags (provider, model, timeout, repeat, prompt, ...) are stored in the
manifest. ``--resume`` takes them from there. The whole original command line may be typed
again with ``--resume`` (upstream's habit: ``gaia-run ... --out-dir D --resume``): a flag
typed with the value the manifest holds is fine; one typed with another value is refused,
naming it, because a run must not change what it measures halfway.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from agent_benchmarks.backends.base import Backend
from agent_benchmarks.cli import (
    RESUME_OUT_DIR,
    GradeCommand,
    add_dataset_args,
    add_run_args,
    entry,
    load_selected,
    selection_from_args,
)
from agent_benchmarks.datasets import (
    LoadedDataset,
    load_dataset_bundled,
    load_tasks,
    sha256_file,
)
from agent_benchmarks.errors import InputError
from agent_benchmarks.pricing import load_price_table
from agent_benchmarks.prompts import PROMPT_NAMES, STANDARD, default_prompt_name, prompt_variant
from agent_benchmarks.provenance import build_manifest, git_state, utc_now
from agent_benchmarks.records import Manifest, Mode, RunSession, Scores, Task
from agent_benchmarks.redact import redact_argv
from agent_benchmarks.runner.engine import AttemptRunner, RunOutcome, execute
from agent_benchmarks.runner.executor import LocalPool
from agent_benchmarks.runner.plan import plan_attempts
from agent_benchmarks.runner.process import memory_cap_method
from agent_benchmarks.runner.session import TaskSession
from agent_benchmarks.scoring.scorecard import Grader, read_manifest
from agent_benchmarks.storage import PredictionsStream, current_task_id, write_json_atomic
from agent_benchmarks.suite import SuiteDef

# Flags that define what a run measures. Stored in the manifest; fixed once a run starts.
RUN_FLAGS = (
    "provider",
    "model",
    "timeout",
    "repeat",
    "memory_max_mb",
    "system_prompt_file",
    "prompt",
    "no_empty_retry",
    "block_answer_sources",
    "prices",
    "scaffold",
    "user_agent",
)
# Selection flags: a resumed run keeps the manifest's task ids; typed again, they must say
# what the manifest's selection says.
SELECTION_FLAGS = (
    "limit",
    "task_ids",
    "level",
    "site",
    "sample_per_site",
    "sample_seed",
    "skip_attachments",
)


@dataclass(frozen=True)
class BackendCLI:
    """How a backend joins the command line: its flags and how to build it."""

    name: str
    add_args: Callable[[argparse.ArgumentParser], None]
    # Flags of this backend that define a run (checked on --resume like RUN_FLAGS).
    run_flags: tuple[str, ...]
    # (args, suite, scripted_model) -> the backend, ready (binaries checked). A scripted
    # model name means the suite plays the model itself (localweb without --provider).
    build: Callable[[argparse.Namespace, SuiteDef, str | None], Backend]
    # results/<suite>/<stamp> for the native runner; results/<suite>-mcp/<backend>/...
    run_dir: Callable[[SuiteDef, argparse.Namespace], Path]
    prog_suffix: str = "-run"  # the console script is <suite><suffix>
    # This runner's default --timeout; a suite whose own default is shorter keeps it
    # (localweb: local pages). None: the suite's default.
    default_timeout_s: float | None = None
    # This runner's default --memory-max-mb (None: no cap unless asked).
    default_memory_max_mb: int | None = None
    # Whether the runner can set the browser's User-Agent (--user-agent).
    user_agent: bool = False
    # What each attempt gets to itself, written to the manifest (settings.isolation).
    isolation: str | None = None
    # Answers an informational flag of the backend's (claude-mcp: --list-tools) before any
    # task is loaded: an exit status, or None to run as usual.
    inform: Callable[[argparse.Namespace], int | None] | None = None
    # Whether a suite's retry_empty_once applies to this runner (upstream did it natively).
    empty_retry: bool = False

    def timeout_for(self, suite: SuiteDef) -> float:
        if self.default_timeout_s is None:
            return suite.default_timeout_s
        return min(self.default_timeout_s, suite.default_timeout_s)


# (suite, args, mode, scripted_model, backend) -> a context manager yielding the run's
# TaskSession.
SessionFactory = Callable[
    [SuiteDef, argparse.Namespace, Mode, str | None, Backend],
    AbstractContextManager[TaskSession],
]


@contextmanager
def dataset_session(
    suite: SuiteDef,
    args: argparse.Namespace,
    mode: Mode,
    scripted_model: str | None,
    backend: Backend,
) -> Iterator[TaskSession]:
    yield TaskSession(
        suite,
        mode,
        system_prompt=read_system_prompt(args.system_prompt_file),
        block_answer_sources=bool(args.block_answer_sources),
        prompt_name=args.prompt or STANDARD,
    )


def read_system_prompt(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--system-prompt-file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"--system-prompt-file {path}: not UTF-8 text") from None
    if not text.strip():
        raise InputError(f"--system-prompt-file {path}: the file is empty")
    return text


def add_common_run_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("what the agent is told, and grading")
    group.add_argument(
        "--system-prompt-file", help="replace the suite's system prompt with this file's text"
    )
    group.add_argument(
        "--prompt",
        metavar="NAME",
        help=f"the prompt variant: {', '.join(PROMPT_NAMES)} (GAIA and AssistantBench; "
        "default: the one upstream published with this runner and model)",
    )
    group.add_argument(
        "--no-empty-retry",
        action="store_const",
        const=True,
        help="do not retry an empty answer once (GAIA native retries it, as upstream)",
    )
    group.add_argument(
        "--block-answer-sources",
        action="store_const",
        const=True,
        help="block URLs that would hand over the answer (dataset mirrors, leaderboards, "
        "any URL holding the task id)",
    )
    group.add_argument(
        "--prices", help="a JSON price table overriding the built-in one (USD per 1M tokens)"
    )
    group.add_argument(
        "--scaffold",
        action="store_const",
        const=True,
        help="the model behind --base-url is a test double: label the run scaffold, not live",
    )
    group.add_argument(
        "--grade",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="grade when the run ends, as upstream's runs do (default: on; --no-grade leaves "
        "it to <suite>-grade; not part of what the run measures, so a resume may differ)",
    )


def run_command(
    suite: SuiteDef,
    backend_cli: BackendCLI,
    session_factory: SessionFactory = dataset_session,
    add_suite_args: Callable[[argparse.ArgumentParser], None] | None = None,
    scripted_model: str | None = None,
) -> Callable[[Sequence[str] | None], int]:
    """Build a suite's ``-run`` console script for one backend."""
    prog = f"{suite.name}{backend_cli.prog_suffix}"

    @entry
    def main(argv: Sequence[str] | None = None) -> int:
        argv = list(sys.argv[1:] if argv is None else argv)
        parser = argparse.ArgumentParser(
            prog=prog, description=f"Run {suite.title} with {backend_cli.name}."
        )
        grading = suite_grading(suite)
        add_dataset_args(parser, suite)
        add_run_args(parser)
        add_common_run_args(parser)
        grading.add_grading_args(parser)
        backend_cli.add_args(parser)
        if add_suite_args is not None:
            add_suite_args(parser)
        args = parser.parse_args(argv)
        typed = _typed_flags(parser, argv)
        return _run(
            suite, backend_cli, session_factory, grading, args, argv, prog, scripted_model, typed
        )

    return main


def suite_grading(suite: SuiteDef) -> GradeCommand:
    """The suite's ``<suite>-grade`` command, which a run ends with. Imported on use: the
    suite's package imports this module to build its run commands."""
    return importlib.import_module(f"agent_benchmarks.{suite.name}.grade").main


def end_grader(
    grading: GradeCommand,
    args: argparse.Namespace,
    predictions_path: Path,
    tasks: Sequence[Task],
    prog: str,
) -> Grader:
    """The grader a run ends with, built before its first task, so that what would make the
    grade fail after the last task (a judge without its API key, bad judge settings, tasks
    with no gold answer to grade against) stops the run before it starts."""
    grader = grading.make_grader(args, predictions_path)
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
            f"later with {grading.suite_name}-grade RUN_DIR"
        )
    return grader


def _run(
    suite: SuiteDef,
    backend_cli: BackendCLI,
    session_factory: SessionFactory,
    grading: GradeCommand,
    args: argparse.Namespace,
    argv: list[str],
    prog: str,
    scripted_model: str | None,
    typed: set[str],
) -> int:
    if backend_cli.inform is not None and (status := backend_cli.inform(args)) is not None:
        return status
    console = Console(stderr=True, soft_wrap=True)
    run_flags = RUN_FLAGS + backend_cli.run_flags
    manifest: Manifest | None = None
    if args.user_agent is not None and not backend_cli.user_agent:
        raise InputError(
            f"--user-agent: {prog} cannot set the browser's User-Agent ({suite.name}-run "
            f"and {suite.name}-ab-run can)"
        )
    if args.prompt is not None and args.prompt not in PROMPT_NAMES:
        raise InputError(f"--prompt {args.prompt}: no such prompt ({', '.join(PROMPT_NAMES)})")
    # Absolute: each agent runs in its attempt folder, so relative paths would break.
    if args.resume is not None:
        run_dir = _resume_folder(args)
        manifest = _load_resumable(run_dir, suite, args, typed)
        _apply_stored_flags(args, manifest.settings.get("flags", {}), run_flags, typed)
    else:
        if args.no_retry_errors:
            raise InputError("--no-retry-errors only applies with --resume")
        run_dir = (args.out_dir or backend_cli.run_dir(suite, args)).absolute()
        if (run_dir / "predictions.jsonl").exists():
            raise InputError(
                f"{run_dir} already holds a run; continue it with --resume {run_dir}, "
                "or choose another --out-dir"
            )
    args.repeat = args.repeat or 1
    # Without --provider, a suite that can play the model itself (localweb) does so.
    if args.provider is not None or getattr(args, "base_url", None) is not None:
        scripted_model = None
    mode: Mode = "scaffold" if scripted_model or args.scaffold else "live"
    prices = load_price_table(Path(args.prices) if args.prices else None)
    # Built before the tasks load: its own flags, keys and programs are checked first, so
    # a bad flag is named before a dataset is fetched (or refused for want of a token).
    backend = backend_cli.build(args, suite, scripted_model)
    predictions_path = run_dir / "predictions.jsonl"
    if manifest is not None:
        loaded, tasks = _reload_tasks(suite, manifest)
    else:
        loaded, tasks = load_selected(suite, args)
        if not tasks:
            raise InputError("the selection is empty: no task to run")
    if manifest is None:  # a resumed run keeps what its manifest says, defaults included
        args.timeout = args.timeout or backend_cli.timeout_for(suite)
        if args.memory_max_mb is None:
            args.memory_max_mb = backend_cli.default_memory_max_mb
    # A scripted model is named as such in the manifest and never priced, whatever id the
    # driven program had to be given (Claude Code insists on a real model id).
    # The model the program runs: passed, or the program's own default where the backend
    # knows it (Lightpanda's for gemini), so the run is priced and labelled.
    model = (
        scripted_model or backend.settings().get("model") or backend.settings().get("default_model")
    )
    if manifest is not None and manifest.model != model:
        raise InputError(
            f"--resume {run_dir}: the model was {manifest.model!r} when the run started and "
            f"is {model!r} now (an environment default such as AI_GATEWAY_MODEL changed?); "
            "restore it or start a new run"
        )
    if args.prompt is None and manifest is not None:
        args.prompt = STANDARD  # a run started before the variants ran the suite's own
    elif args.prompt is None:  # a resumed run has its prompt from the manifest
        assert suite.prompt is not None
        args.prompt = default_prompt_name(suite.prompt, backend.name, model)
    if suite.prompt is not None:
        try:
            prompt_variant(suite.prompt, args.prompt)
        except ValueError as exc:
            raise InputError(f"--prompt {args.prompt}: {exc}") from None
    # Last of the checks, after the run's own flags: nothing has started yet.
    grader = end_grader(grading, args, predictions_path, tasks, prog) if args.grade else None
    empty_retry = suite.retry_empty_once and backend_cli.empty_retry and not args.no_empty_retry
    if manifest is not None and not manifest.settings.get("empty_retry", {}).get("on"):
        empty_retry = False  # a run started without it (or before it existed) stays so
    flags = {name: _jsonable(getattr(args, name, None)) for name in run_flags}

    # Streamed: a resumed run's rows may hold gigabytes of traces; the plan keeps statuses.
    existing = PredictionsStream(predictions_path) if predictions_path.exists() else []
    task_ids = [t.id for t in tasks]
    plan = plan_attempts(task_ids, args.repeat, existing, retry_errors=not args.no_retry_errors)
    if isinstance(existing, PredictionsStream):
        for warning in existing.warnings():
            console.print(
                f"[yellow]warning:[/] {warning}; it is set aside to predictions.jsonl.torn"
            )

    with session_factory(suite, args, mode, scripted_model, backend) as session:
        sha, dirty = git_state()
        this_session = RunSession(
            started_at=utc_now(),
            argv=redact_argv([prog, *argv]),
            planned=len(plan.todo),
            retried=plan.retried,
            git_sha=sha,
            git_dirty=dirty,
        )
        if manifest is None:
            run_dir.mkdir(parents=True, exist_ok=True)
            manifest = build_manifest(
                suite=suite.name,
                loaded=loaded,
                task_ids=task_ids,
                selection=selection_from_args(args).as_dict,
                backend=backend.name,
                mode=mode,
                argv=[prog, *argv],
                provider=backend.settings().get("provider"),
                model=model,
                programs=backend.programs(),
                workers=args.workers,
                timeout_s=args.timeout,
                repeat=args.repeat,
                settings={
                    "flags": flags,
                    "backend": backend.settings(),
                    "session": session.settings(),
                    "prices": {"version": prices.version, "source": prices.source},
                    **({"isolation": backend_cli.isolation} if backend_cli.isolation else {}),
                    "memory_cap": _memory_cap(args.memory_max_mb),
                    "empty_retry": _empty_retry(suite, backend_cli, empty_retry),
                },
            )
        else:
            _check_backend_unchanged(manifest, backend, run_dir)
            _check_prompt_unchanged(manifest, session, run_dir)
        manifest.sessions.append(this_session)
        _write_manifest(run_dir, manifest)
        _announce(console, suite, manifest, plan, run_dir)
        runner = AttemptRunner(
            run_dir=run_dir,
            tasks={t.id: t for t in tasks},
            session=session,
            backend=backend,
            timeout_s=args.timeout,
            memory_max_mb=args.memory_max_mb or None,
            prices=prices,
            price_model=None if getattr(backend, "prices_own_rows", False) else model,
            retry_empty=empty_retry,
        )
        outcome = execute(
            plan.todo, runner, LocalPool(args.workers), predictions_path, suite.title, console
        )
        this_session.finished_at = utc_now()
        this_session.completed = outcome.written
        this_session.interrupted = outcome.interrupted
        this_session.wall_seconds = round(outcome.wall_seconds, 3)
        this_session.busy_seconds = round(outcome.busy_seconds, 3)
        this_session.agent_seconds = round(outcome.agent_seconds, 3)
        manifest.sessions[-1] = this_session
        manifest.finished_at = this_session.finished_at
        # What the backend learned only by running joins its settings (Claude Code: the
        # model id an alias such as `sonnet` resolved to).
        learned = getattr(backend, "learned_settings", None)
        if learned is not None:
            merge_learned(manifest.settings.setdefault("backend", {}), learned())
        _write_manifest(run_dir, manifest)
    grade_later = shlex.join(
        [f"{grading.suite_name}-grade", str(run_dir), *_grading_flags(grading, args, typed)]
    )
    return _conclude(console, grader, grading, grade_later, outcome, run_dir, prog)


def merge_learned(backend_settings: dict[str, Any], learned: dict[str, Any]) -> None:
    """Add what this session learned to the manifest's backend settings; a list keeps what
    earlier sessions of the run learned too (a resumed run's model ids are all its ids)."""
    for key, value in learned.items():
        before = backend_settings.get(key)
        if isinstance(value, list) and isinstance(before, list):
            value = sorted(set(before) | set(value))
        backend_settings[key] = value


def _grading_flags(grading: GradeCommand, args: argparse.Namespace, typed: set[str]) -> list[str]:
    """The grading flags typed on this command line (WebBench: the judge's), as
    ``<suite>-grade`` takes them, so that grading later grades as this run would have."""
    parser = argparse.ArgumentParser(add_help=False)
    grading.add_grading_args(parser)
    flags: list[str] = []
    for action in parser._actions:
        if action.dest not in typed:
            continue
        value = getattr(args, action.dest)
        if action.nargs == 0:  # a switch
            flags.append(action.option_strings[0])
        else:
            flags += [action.option_strings[0], str(value)]
    return flags


def _conclude(
    console: Console,
    grader: Grader | None,
    grading: GradeCommand,
    grade_later: str,
    outcome: RunOutcome,
    run_dir: Path,
    prog: str,
) -> int:
    c = outcome.counts
    console.print(
        f"{outcome.written} attempt(s) in {outcome.wall_seconds:.1f}s: ok {c['ok']}, "
        f"empty {c['empty']}, timeout {c['timeout']}, error {c['error']} → {run_dir}"
    )
    if outcome.contaminated:
        console.print(
            f"[bold red]CONTAMINATED: {len(outcome.contaminated)} attempt(s) called tools "
            f"outside the browser MCP server[/] ({', '.join(outcome.contaminated[:5])}); "
            "their rows list the calls in details.foreign_calls and scores.json reports "
            "accuracy without them"
        )
    if outcome.interrupted:
        console.print(f"[yellow]interrupted.[/] continue with: {prog} --resume {run_dir}")
        return 130
    # Every attempt failing is the run's failure (exit 1), but it is graded all the same:
    # an attempt that printed an answer before it failed is graded on it, as upstream does.
    all_failed = bool(outcome.written) and c["timeout"] + c["error"] == outcome.written
    if all_failed:
        console.print(
            "[red]every attempt failed with an infrastructure error[/] (see the rows' "
            f"error and stderr_tail); retry them with: {prog} --resume {run_dir}"
        )
    if grader is None:
        console.print(f"not graded (--no-grade); grade with: {grade_later}")
        return 1 if all_failed else 0
    try:
        scores = grading.grade(grader, run_dir / "predictions.jsonl")
    except (InputError, OSError) as exc:
        console.print(
            f"[red]grading failed:[/] {exc}\nthe run folder is complete ({run_dir}); grade it "
            f"with: {grade_later}"
        )
        return 1
    unjudged = _judge_calls_failed(scores)
    if unjudged:
        console.print(
            f"[red]grading incomplete:[/] the judge's API gave no reply for {unjudged} "
            "attempt(s) (see details.judge_problem in scores.json); the run folder is "
            f"complete ({run_dir}); grade again with: {grade_later} (verdicts already given "
            "are cached)"
        )
        return 1
    return 1 if all_failed else 0


def _judge_calls_failed(scores: Scores) -> int:
    """Attempts an LLM judge could not judge because its API gave no reply (none without a
    judge): counted INVALID under upstream's protocol, ``judge_error`` under the strict one."""
    return (scores.grader.get("judged") or {}).get("n_call_failed", 0)


def _announce(
    console: Console, suite: SuiteDef, manifest: Manifest, plan: Any, run_dir: Path
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
    if manifest.mode == "scaffold":
        console.print(
            "[yellow]scaffold run:[/] the model is a scripted test double; these numbers "
            "test the browser stack and the harness, they are not a benchmark result"
        )


def _write_manifest(run_dir: Path, manifest: Manifest) -> None:
    write_json_atomic(run_dir / "manifest.json", manifest.model_dump_json(indent=2) + "\n")


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def _typed_flags(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The dests of the flags typed on the command line (not left at their defaults)."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    typed, _ = parser.parse_known_args(argv)
    return set(vars(typed))


def _resume_folder(args: argparse.Namespace) -> Path:
    """The run folder of ``--resume [RUN_DIR]``: RUN_DIR, else ``--out-dir``'s."""
    if args.resume == RESUME_OUT_DIR:
        if args.out_dir is None:
            raise InputError(
                "--resume needs the run folder: --resume RUN_DIR, or --out-dir RUN_DIR --resume"
            )
        return args.out_dir.absolute()
    run_dir = args.resume.absolute()
    if args.out_dir is not None and args.out_dir.resolve() != run_dir.resolve():
        raise InputError(
            f"--out-dir {args.out_dir}: this run's folder is {run_dir} (--resume {args.resume}); "
            "a resumed run stays in its folder"
        )
    return run_dir


def _load_resumable(
    run_dir: Path, suite: SuiteDef, args: argparse.Namespace, typed: set[str]
) -> Manifest:
    if not run_dir.is_dir():
        raise InputError(f"--resume {run_dir}: no such run folder")
    manifest = read_manifest(run_dir)
    if manifest is None:
        raise InputError(f"--resume {run_dir}: no manifest.json there, so not a run folder")
    if manifest.suite != suite.name:
        raise InputError(f"--resume {run_dir}: a {manifest.suite} run, not {suite.name}")
    _check_selection_unchanged(manifest, args, typed, run_dir)
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


def _check_selection_unchanged(
    manifest: Manifest, args: argparse.Namespace, typed: set[str], run_dir: Path
) -> None:
    """Selection flags typed with ``--resume`` must say what the manifest says."""
    keeps = f"a resumed run keeps the tasks its manifest lists ({run_dir}/manifest.json)"
    defaults = {"sample_seed": 0, "skip_attachments": False}
    for name in SELECTION_FLAGS:
        if name not in typed:
            continue
        given = getattr(args, name, None)
        kept = manifest.selection.get(name, defaults.get(name))
        if name == "task_ids" and given and kept:  # either form of a WebBench id
            same = [current_task_id(manifest.suite, i) for i in given] == [
                current_task_id(manifest.suite, i) for i in kept
            ]
        else:
            same = given == kept
        if not same:
            raise _changed(name, given, kept, keeps)
    if "split" in typed and args.split != manifest.split:
        raise _changed("split", args.split, manifest.split, keeps)
    if "revision" in typed and args.revision != manifest.dataset.revision:
        raise _changed("revision", args.revision, manifest.dataset.revision, keeps)
    if "dataset_file" in typed:
        given_path = args.dataset_file.resolve()
        source = manifest.dataset
        kept_path = Path(source.path).resolve() if source.kind == "file" and source.path else None
        if given_path != kept_path:
            kept = str(kept_path) if kept_path else f"the {source.kind} dataset"
            raise InputError(
                f"--dataset-file {args.dataset_file}: this run was started with {kept}; "
                f"{keeps} (start a new run to change it)"
            )
        if not given_path.is_file() or sha256_file(given_path) != source.sha256:
            raise InputError(
                f"--dataset-file {args.dataset_file}: the file changed since this run started "
                f"(sha256 {source.sha256} then); restore it or start a new run"
            )


def _apply_stored_flags(
    args: argparse.Namespace, stored: dict[str, Any], names: Sequence[str], typed: set[str]
) -> None:
    for name in names:
        given = _jsonable(getattr(args, name, None))
        kept = stored.get(name)
        if name in typed and given is not None and given != kept:
            raise _changed(name, given, kept, "a resumed run keeps its settings")
        setattr(args, name, kept)


def _empty_retry(suite: SuiteDef, backend_cli: BackendCLI, on: bool) -> dict[str, Any]:
    if on:
        return {
            "on": True,
            "how": "an attempt whose answer is empty, that neither timed out nor was refused "
            "for safety, runs once more; the retry is kept only if it answered; the row's "
            "duration is both attempts' and details.retried says so (upstream's GAIA native)",
        }
    why = (
        "--no-empty-retry"
        if suite.retry_empty_once and backend_cli.empty_retry
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
