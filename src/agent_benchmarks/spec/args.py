"""Flags: the one place a command line becomes a :class:`~agent_benchmarks.spec.run_spec.RunSpec`.

The shared flags are declared here; a backend's, suite's or grader's own flags are made from
the fields of its :class:`~agent_benchmarks.spec.run_spec.Options` model (:func:`add_options_args`),
so each such field is declared once, by its module, and read back by the same name.
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.run_spec import DEFAULT_RESOURCE_SAMPLE_MS, Options, SelectionSpec

Main = Callable[[Sequence[str] | None], int]

ALL_PER_SITE = "all"


def entry(func: Main) -> Main:
    """A command: bad input is one line on stderr and its exit status (2), Ctrl-C is 130;
    never a traceback."""

    @functools.wraps(func)
    def wrapper(argv: Sequence[str] | None = None) -> int:
        try:
            return func(argv)
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    return wrapper


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def workers_count(text: str) -> int | str:
    """``--workers``: a count, or ``auto``."""
    if text == "auto":
        return text
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or auto)") from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    return value


def task_id_list(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not ids or any(not i for i in ids):
        raise argparse.ArgumentTypeError(f"expected ID,ID,... with no empty id, got {text!r}")
    return ids


def per_site_count(text: str) -> int | str:
    """``--sample-per-site``: a whole number 0 or more (0 selects none, as upstream's), or
    ``all`` (every task, no draw)."""
    if text.strip().lower() == ALL_PER_SITE:
        return ALL_PER_SITE
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number 0 or more, or {ALL_PER_SITE}, got {text!r}"
        ) from None


def gaia_level(text: str) -> int | None:
    if text == "all":
        return None
    if text in ("1", "2", "3"):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 1, 2, 3 or all, got {text!r}")


# --- Options models as flags ------------------------------------------------------------------


def _bound_check(convert: Callable[[str], Any], field: Any) -> Callable[[str], Any]:
    """The flag's type: the conversion, then the field's ge/gt bounds, as argparse errors."""
    bounds = {
        kind: getattr(meta, kind)
        for meta in field.metadata
        for kind in ("ge", "gt")
        if getattr(meta, kind, None) is not None
    }
    if not bounds:
        return convert

    def checked(text: str) -> Any:
        value = convert(text)
        if "ge" in bounds and value < bounds["ge"]:
            raise argparse.ArgumentTypeError(f"expected {bounds['ge']} or more, got {value}")
        if "gt" in bounds and value <= bounds["gt"]:
            raise argparse.ArgumentTypeError(f"expected a number above {bounds['gt']}, got {value}")
        return value

    checked.__name__ = getattr(convert, "__name__", "value")
    return checked


def _plain_type(annotation: Any) -> tuple[Any, tuple[str, ...] | None]:
    """(the flag's value type, its Literal choices) of an ``X | None`` annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if origin is Literal:
        return str, tuple(str(a) for a in typing.get_args(annotation))
    return annotation, None


def add_options_args(parser: argparse.ArgumentParser, model: type[Options], title: str) -> None:
    """One flag per field of ``model``, as the field declares it (:func:`spec.option`).
    Flags default to None, so that only what was typed reaches the spec (the model fills in
    its defaults, and a resume can tell a typed flag from one left alone)."""
    group = parser.add_argument_group(title)
    for name, field in model.model_fields.items():
        extra = dict(field.json_schema_extra or {})  # type: ignore[arg-type]
        kwargs: dict[str, Any] = {"dest": name, "help": field.description}
        if extra.get("metavar"):
            kwargs["metavar"] = extra["metavar"]
        value_type, choices = _plain_type(field.annotation)
        choices = tuple(extra["choices"]) if extra.get("choices") else choices
        kwargs["default"] = None
        if field.is_required():
            kwargs["required"] = True
        if value_type is bool:
            kwargs.pop("metavar", None)
            kwargs["action"] = "store_const"
            kwargs["const"] = True
        elif typing.get_origin(value_type) is list:
            kwargs["action"] = "append"
        else:
            convert = {int: int, float: float, Path: Path}.get(value_type, str)
            if convert is int:
                convert = _whole
            elif convert is float:
                convert = _number
            kwargs["type"] = _bound_check(convert, field)
            if choices:
                kwargs["choices"] = choices
        group.add_argument(model.flag_of(name), **kwargs)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def options_values(model: type[Options], args: argparse.Namespace) -> dict[str, Any]:
    """The values of ``model``'s flags that were given (None left out), JSON-able."""
    values: dict[str, Any] = {}
    for name in model.model_fields:
        value = getattr(args, name, None)
        if value is not None:
            values[name] = str(value) if isinstance(value, Path) else value
    return values


# --- the shared flags ---------------------------------------------------------------------------


def add_dataset_args(parser: argparse.ArgumentParser, suite: Any) -> None:
    group = parser.add_argument_group("dataset and selection")
    group.add_argument(
        "--dataset-file",
        type=Path,
        help="a local copy in the dataset's own schema (.jsonl, .parquet or .csv): no Hub access",
    )
    if suite.dataset is not None:
        group.add_argument(
            "--split",
            choices=suite.dataset.splits,
            default=suite.dataset.default_split,
            help="dataset split (default: %(default)s)",
        )
        group.add_argument("--revision", help="Hub revision (commit, tag or branch) to load")
    group.add_argument("--limit", type=positive_int, help="run at most N tasks (after selection)")
    group.add_argument("--task-ids", type=task_id_list, help="exactly these tasks: ID,ID,...")
    if "level" in suite.selection_flags:
        group.add_argument(
            "--level", type=gaia_level, default=1, help="GAIA level 1, 2, 3 or all (default: 1)"
        )
    if "skip_attachments" in suite.selection_flags:
        group.add_argument(
            "--skip-attachments", action="store_true", help="leave out tasks with attachments"
        )
    if "site" in suite.selection_flags:
        group.add_argument(
            "--site",
            help="only this site, its name exactly: the start URL's host, lowercased, "
            "without www. (e.g. allrecipes.com)",
        )
        group.add_argument(
            "--sample-per-site",
            type=per_site_count,
            default=None,
            metavar="N|all",
            help="tasks drawn per site, by upstream's draw: the same seed selects the same "
            "tasks (default: 1; 0 selects none, as upstream's, so it is refused; all: every "
            "task, no draw)",
        )
        group.add_argument(
            "--sample-seed", type=int, default=0, help="seed of the per-site draw (default: 0)"
        )


def selection_of(args: argparse.Namespace) -> SelectionSpec:
    return SelectionSpec(
        task_ids=getattr(args, "task_ids", None),
        limit=getattr(args, "limit", None),
        level=getattr(args, "level", None),
        skip_attachments=getattr(args, "skip_attachments", False),
        site=getattr(args, "site", None),
        sample_per_site=getattr(args, "sample_per_site", None),
        sample_seed=getattr(args, "sample_seed", 0),
    )


# ``--resume`` given without a folder: the run folder is ``--out-dir``'s.
RESUME_OUT_DIR = Path("<--out-dir>")


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """Flags every runner shares. Flags that define a run default to None here, so a
    ``--resume`` can tell a flag the user typed from one left alone."""
    group = parser.add_argument_group("run")
    _add_model_and_pool_args(group)
    _add_attempt_limit_args(group)
    _add_browser_args(group)
    # Between --web and --web-trust: the usage line lists the flags in the order they are
    # added, and it has always listed the budget's there.
    add_budget_args(parser)
    _add_web_trust_arg(group)
    _add_run_folder_args(group)
    _add_executor_args(group)


def _add_model_and_pool_args(group: argparse._ArgumentGroup) -> None:
    """The model the agents call, and how many attempts run at once."""
    group.add_argument("--provider", help="model provider (anthropic, gemini, openai, ...)")
    group.add_argument("--model", help="model id")
    group.add_argument(
        "--workers",
        type=workers_count,
        default=1,
        metavar="N|auto",
        help="tasks at once; auto: from this machine's cores and memory and the stack's "
        "measured peak (an earlier run of the stack beside the run folder, else a first "
        "attempt run alone), recorded in the manifest",
    )


def _add_attempt_limit_args(group: argparse._ArgumentGroup) -> None:
    """Each attempt's limits and how often it is measured, and how many attempts a task gets."""
    group.add_argument(
        "--timeout",
        type=positive_float,
        help="wall-clock seconds per task (default: per runner: native and chat 300, "
        "Claude Code + MCP 600, localweb its own shorter one)",
    )
    group.add_argument(
        "--repeat", type=positive_int, help="run every task K times (pass@k, variance)"
    )
    group.add_argument(
        "--memory-max-mb",
        type=non_negative_int,
        help="memory cap per task in MB, 0 for none (default: per runner, the native runner "
        "6000; a cgroup with no swap where one can be made, else RLIMIT_DATA)",
    )
    group.add_argument(
        "--resource-sample-ms",
        type=non_negative_int,
        metavar="MS",
        help="sample each attempt's processes for their memory and CPU every MS "
        f"milliseconds (default: {DEFAULT_RESOURCE_SAMPLE_MS}; 0: not measured)",
    )


def _add_browser_args(group: argparse._ArgumentGroup) -> None:
    """What the browser says it is, and which web it browses."""
    group.add_argument(
        "--user-agent",
        metavar="UA",
        help="the browser's User-Agent (native: lightpanda --user-agent; agent-browser chat: "
        'AGENT_BROWSER_USER_AGENT; Lightpanda refuses any value containing "Mozilla")',
    )
    group.add_argument(
        "--web",
        nargs="+",
        metavar="MODE [ARCHIVE]",
        help="the web the stack browses: live (the default), record ARCHIVE (through a "
        "proxy that writes every request and response to ARCHIVE: a WARC archive folder, or "
        "a .wacz file), "
        "or replay ARCHIVE (served from ARCHIVE alone: nothing reaches the network, and what "
        "it lacks is a recorded miss)",
    )


def _add_web_trust_arg(group: argparse._ArgumentGroup) -> None:
    """What a recording of the web trusts."""
    group.add_argument(
        "--web-trust",
        action="append",
        metavar="PEM",
        help="with --web record: a CA certificate file the recording proxy trusts beside the "
        "system's trust store, such as a local site's own test CA (repeatable). A site whose "
        "certificate neither holds is not recorded: the stack meets it as it would live",
    )


def _add_run_folder_args(group: argparse._ArgumentGroup) -> None:
    """The run's folder: a new one, or a run to continue."""
    group.add_argument("--out-dir", type=Path, help="run folder (default: results/<suite>/<UTC>)")
    group.add_argument(
        "--resume",
        nargs="?",
        type=Path,
        const=RESUME_OUT_DIR,
        metavar="RUN_DIR",
        help="continue a run folder: --resume RUN_DIR, or --resume with --out-dir RUN_DIR "
        "(the run's own flags may be given again with the same values)",
    )
    group.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on --resume, keep timeout/error rows instead of retrying them",
    )


def _add_executor_args(group: argparse._ArgumentGroup) -> None:
    """Where the attempts run."""
    group.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where attempts run: local (this machine, --workers at once; the default) or "
        "ray (Ray tasks on the cluster at --ray-address or RAY_ADDRESS, else on a local Ray "
        "started for the run); not part of what a run measures, so a resume may change it",
    )
    group.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster to run on (host:port, ray://host:port or auto; default: RAY_ADDRESS)",
    )


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def add_budget_args(parser: argparse.ArgumentParser) -> None:
    """The one budget every agent gets, enforced by the harness at the model boundary."""
    group = parser.add_argument_group(
        "budget",
        "The same for every agent: the harness's model meter enforces it, and an attempt "
        "past it ends with status budget, a wrong answer.",
    )
    group.add_argument(
        "--max-steps", type=positive_int, metavar="N", help="tool calls per task (default: none)"
    )
    group.add_argument(
        "--max-tokens",
        type=positive_int,
        metavar="N",
        help="model tokens per task, cache reads and writes included (default: none)",
    )
    group.add_argument(
        "--max-cost-usd",
        type=positive_float,
        metavar="USD",
        help="US dollars per task at the price table's prices (default: none)",
    )
    group.add_argument(
        "--temperature",
        type=non_negative_float,
        metavar="T",
        help="the sampling temperature the harness sets on every model request (default: "
        "the agent's own; a provider that refuses it says so in the attempt's error)",
    )


def add_common_run_args(parser: argparse.ArgumentParser) -> None:
    from agent_benchmarks.spec.prompts import PROMPT_NAMES

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


def web_of(values: list[str] | None) -> tuple[str | None, str | None]:
    """``--web MODE [ARCHIVE]`` as (mode, archive folder or WACZ file): (None, None) when not
    given."""
    if values is None:
        return None, None
    mode, *rest = values
    if mode == "live":
        if rest:
            raise InputError(f"--web live takes no archive (got {' '.join(rest)})")
        return mode, None
    if mode not in ("record", "replay"):
        raise InputError(f"--web {mode}: the modes are live, record ARCHIVE and replay ARCHIVE")
    if len(rest) != 1:
        raise InputError(
            f"--web {mode} needs one archive (a folder or a .wacz file): --web {mode} ARCHIVE"
        )
    return mode, str(Path(rest[0]).absolute())


def typed_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The dests of the flags typed on the command line (not left at their defaults)."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    typed, _ = parser.parse_known_args(list(argv))
    return set(vars(typed))
