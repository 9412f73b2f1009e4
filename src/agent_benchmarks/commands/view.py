"""``agent-benchmarks view`` (the run browser) and ``agent-benchmarks export --inspect``.

``view`` lists every run under a results folder on the terminal, at its width, and writes
the browser's pages beside the runs (or serves them live on 127.0.0.1 with ``--serve``);
``export --inspect`` writes each run given as an Inspect eval log. Neither writes into a
run folder.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.report.terminal import print_table
from agent_benchmarks.view.publish import default_out, make_server, summaries, write_site
from agent_benchmarks.view.site import runs_table


def view_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks view",
        description="Every run under a results folder in one table (state: running, "
        "interrupted, graded), and pages to read them: each run, each attempt (its task, "
        "answer, grade, tool calls with their outputs, errors, resources and provenance). "
        "The pages are written beside the runs and open with no server; --serve serves them "
        "live on 127.0.0.1 instead.",
    )
    parser.add_argument(
        "results", nargs="?", type=Path, default=Path("results"), metavar="RESULTS",
        help="the folder the runs are in, or one run folder (default: results)",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, metavar="DIR",
        help="where the pages go (default: view/ in RESULTS, or beside a run folder)",
    )  # fmt: skip
    parser.add_argument(
        "--serve", action="store_true",
        help="serve the pages live on 127.0.0.1 (a running run's pages follow its rows)",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=int, default=0, metavar="P",
        help="the port for --serve (default: 0, a free one the system picks)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    root: Path = args.results
    if not root.is_dir():
        raise InputError(f"{root}: no such folder (give the folder the runs are in)")
    console = Console(soft_wrap=True)
    if args.serve:
        server = make_server(root, args.port)
        _print_runs(console, root, summaries(root, None))
        host, port = server.server_address[:2]
        console.print(f"serving {root} at http://{host}:{port}/ (Ctrl-C stops)", markup=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return 0
    out = args.out or default_out(root)
    listed, n_pages, failed = write_site(root, out)
    _print_runs(console, root, listed)
    for problem in failed:
        console.print(f"warning: not written: {problem}", style="yellow", markup=False)
    console.print(
        f"wrote {n_pages} page(s) to {out}: open {(out / 'index.html').resolve().as_uri()}",
        markup=False,
    )
    return 0


def _print_runs(console: Console, root: Path, listed: list) -> None:
    if not listed:
        console.print(f"{root}: no run folder in it", markup=False)
        return
    table = runs_table(listed)
    table.title = f"{len(listed)} run(s) in {root}"
    print_table(console, table, "every column: the pages")


def export_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks export",
        description="Write runs in another tool's format. --inspect: each run as an Inspect "
        "eval log (inspect-ai's own writer), one sample per attempt, for `inspect view`.",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN")
    parser.add_argument(
        "--inspect", action="store_true", required=True,
        help="write Inspect eval logs (.eval), one per run",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=Path("inspect-logs"), metavar="DIR",
        help="the folder the logs go to (default: inspect-logs; `inspect view --log-dir DIR`)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    from agent_benchmarks.view.inspect_log import export_runs

    console = Console(soft_wrap=True)
    for run_dir, path, n in export_runs(args.run_dirs, args.out):
        console.print(f"{run_dir}: {n} sample(s) → {path}", markup=False)
    console.print(f"open them with: inspect view --log-dir {args.out}", markup=False)
    return 0
