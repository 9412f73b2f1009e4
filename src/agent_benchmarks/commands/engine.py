"""``agent-benchmarks engine``: the engine benchmark (browser stacks without a model).

    agent-benchmarks engine run [flags]        run it; writes RUN/raw.jsonl, then the report
    agent-benchmarks engine report RUN [--out DIR]   the report again, from RUN/raw.jsonl alone
    agent-benchmarks engine list               the configurations and tasks there are

Bad input is one line naming what is wrong and exit 2, before anything starts.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.args import non_negative_int, positive_float, positive_int

_USAGE = (
    "usage: agent-benchmarks engine {run,report,list} ...\n\n"
    "  run [flags]         run the engine benchmark (--help for the flags)\n"
    "  report RUN          write RUN's report again from RUN/raw.jsonl\n"
    "  list                the configurations and the tasks\n"
)


def _slow(text: str) -> tuple[str, int]:
    name, sep, ms = text.rpartition("=")
    if not sep or not name or not ms.isdigit():
        raise argparse.ArgumentTypeError(f"expected CONFIG=MS, got {text!r}")
    return name, int(ms)


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    if not names or not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME,NAME,... with no empty name: {text!r}")
    return names


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1], got {value}")
    return value


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks engine run",
        description="Time scripted tasks on the bundled site with every driver x engine "
        "configuration, no model: upstream's pandascript-vs-cdp method, offline.",
    )
    _add_selection_args(parser)
    _add_measurement_args(parser)
    _add_crawl_args(parser)
    _add_validity_args(parser)
    _add_site_and_binary_args(parser)
    parser.add_argument("--no-report", action="store_true", help="skip the report at the end")
    return parser


def _add_selection_args(parser: argparse.ArgumentParser) -> None:
    """The run's folder, and what it runs: the tasks and the configurations."""
    from agent_benchmarks.enginebench import tasks

    parser.add_argument(
        "--out-dir",
        type=Path,
        help="the run's folder (default: results/engine/<UTC stamp>; never one that exists)",
    )
    parser.add_argument(
        "--tasks",
        type=_names,
        default=list(tasks.DEFAULT_TASKS),
        help="login, crawl, localweb:<id> (default: " + ", ".join(tasks.DEFAULT_TASKS) + ")",
    )
    parser.add_argument(
        "--configs",
        type=_names,
        default=["*"],
        help="configuration names or patterns (puppeteer/*, */lightpanda, "
        "mcp:*; default: all; `engine list` names them)",
    )
    parser.add_argument(
        "--slow",
        type=_slow,
        action="append",
        default=[],
        metavar="CONFIG=MS",
        help="add a variant of CONFIG whose pages the site serves MS later (repeatable)",
    )


def _add_measurement_args(parser: argparse.ArgumentParser) -> None:
    """How the executions are measured: cold or warm, the rotations, the quiet between
    executions, the drivers' wait, the time limit and the memory sampling."""
    from agent_benchmarks.enginebench import bench, programs

    parser.add_argument(
        "--modes", type=_names, default=list(bench.MODES), help="cold, warm or both (default: both)"
    )
    parser.add_argument(
        "--runs", type=positive_int, default=10, help="measured rotations (default: 10)"
    )
    parser.add_argument(
        "--warmup",
        type=non_negative_int,
        default=2,
        help="warm-up rotations, recorded but not reported (default: 2)",
    )
    parser.add_argument(
        "--pace", type=float, default=1.0, help="seconds of quiet after each execution (default: 1)"
    )
    parser.add_argument(
        "--wait",
        choices=programs.WAITS,
        default="load",
        help="the script drivers' navigation wait (default: load)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=120.0,
        help="seconds an execution may take before it is killed (default: 120)",
    )
    parser.add_argument(
        "--sample-ms",
        type=non_negative_int,
        default=50,
        help="PSS sampling interval; 0: no PSS (default: 50)",
    )


def _add_crawl_args(parser: argparse.ArgumentParser) -> None:
    """The crawl task's size."""
    parser.add_argument(
        "--crawl-pages",
        type=positive_int,
        default=30,
        help="pages the crawl task reads (default: 30)",
    )
    parser.add_argument(
        "--crawl-parallel",
        type=positive_int,
        default=3,
        help="pages it reads at once: tabs, or MCP sessions (default: 3)",
    )


def _add_validity_args(parser: argparse.ArgumentParser) -> None:
    """When a configuration's executions stop, and when its figures are valid."""
    parser.add_argument(
        "--give-up-after",
        type=positive_int,
        default=3,
        help="failed executions in a row after which a configuration stops "
        "running a task (default: 3)",
    )
    parser.add_argument(
        "--min-valid-share",
        type=_share,
        default=0.8,
        help="share of measured executions that must be valid for the validity gate (default: 0.8)",
    )


def _add_site_and_binary_args(parser: argparse.ArgumentParser) -> None:
    """The site the browsers browse (live, or a recorded web; its port) and the lightpanda
    binary."""
    parser.add_argument(
        "--web",
        nargs=2,
        metavar=("{record,replay}", "ARCHIVE"),
        help="browse a recorded web archive (replay) or record one",
    )
    parser.add_argument(
        "--site-port", type=positive_int, help="the site's port (default: any; with --web 8931)"
    )
    parser.add_argument(
        "--lightpanda",
        type=Path,
        help="the lightpanda binary (default: the one the lightpanda package ships)",
    )


def _run(argv: Sequence[str]) -> int:
    from agent_benchmarks.enginebench import bench
    from agent_benchmarks.enginebench.report import write_report

    args = _run_parser().parse_args(argv)
    web, archive = None, None
    if args.web is not None:
        web, archive = args.web
        if web not in ("record", "replay"):
            raise InputError(f"--web: record or replay, got {web!r}")
    if args.pace < 0:
        raise InputError(f"--pace: 0 or more seconds, got {args.pace}")
    settings = bench.Settings(
        out_dir=args.out_dir,
        tasks=args.tasks,
        configs=args.configs,
        slow=dict(args.slow),
        modes=args.modes,
        runs=args.runs,
        warmup=args.warmup,
        pace_s=args.pace,
        wait=args.wait,
        timeout_s=args.timeout,
        sample_ms=args.sample_ms,
        crawl_pages=args.crawl_pages,
        crawl_parallel=args.crawl_parallel,
        give_up_after=args.give_up_after,
        min_valid_share=args.min_valid_share,
        web=web,
        archive=None if archive is None else Path(archive),
        site_port=args.site_port,
        lightpanda=args.lightpanda,
    )
    raw = bench.run(settings, ["agent-benchmarks", "engine", "run", *argv])
    print(f"raw: {raw}")
    if not args.no_report:
        print(f"report: {write_report(raw)}")
    return 0


def _report(argv: Sequence[str]) -> int:
    from agent_benchmarks.enginebench.report import write_report

    parser = argparse.ArgumentParser(
        prog="agent-benchmarks engine report",
        description="Write a run's report (report.md, report.json, figures/) from its "
        "raw.jsonl alone: the same bytes each time.",
    )
    parser.add_argument("run", type=Path, help="the run's folder, or its raw.jsonl")
    parser.add_argument(
        "--out", type=Path, help="write the report here (default: the run's folder)"
    )
    args = parser.parse_args(argv)
    print(write_report(args.run, args.out))
    return 0


def _list(argv: Sequence[str]) -> int:
    from agent_benchmarks.enginebench.configs import ALL
    from agent_benchmarks.enginebench.tasks import DEFAULT_TASKS, LOCALWEB_PREFIX
    from agent_benchmarks.localweb.oracle import ORACLES

    if argv:
        raise InputError("usage: agent-benchmarks engine list")
    print("configurations (driver/engine):")
    for config in ALL:
        print(f"  {config.name}")
    print("tasks (default: " + ", ".join(DEFAULT_TASKS) + "):")
    for name in ["login", "crawl", *(LOCALWEB_PREFIX + t for t in ORACLES)]:
        print(f"  {name}")
    return 0


def engine_command(argv: Sequence[str]) -> int:
    commands = {"run": _run, "report": _report, "list": _list}
    if not argv or argv[0] not in commands:
        wanted_help = bool(argv) and argv[0] in ("-h", "--help")
        print(_USAGE, file=sys.stdout if wanted_help else sys.stderr, end="")
        return 0 if wanted_help else 2
    return commands[argv[0]](argv[1:])
