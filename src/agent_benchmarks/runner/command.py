"""``<suite>-run``, ``<suite>-mcp-run``, ``<suite>-ab-run``: a command line becomes a
:class:`~agent_benchmarks.spec.run_spec.RunSpec`, and the runner runs it.

The command's flags are the shared ones (:mod:`.args`), the suite's dataset and selection,
and the fields of the backend's, the suite's and the grader's own options models.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.args import (
    RESUME_OUT_DIR,
    Main,
    add_common_run_args,
    add_dataset_args,
    add_options_args,
    add_run_args,
    entry,
    non_negative_int,
    options_values,
    selection_of,
    typed_flags,
    web_of,
)
from agent_benchmarks.spec.run_spec import ExecutorSpec, RunSpec

# For types only: a suite's run module makes its scripts from this module, and grading (which
# imports the suite) must not load the backends' interface and the web it routes through.
if TYPE_CHECKING:
    from agent_benchmarks.backends.base import BackendDef
from agent_benchmarks.spec.suites import (
    SuiteDef,
    backend_def,
    grading_options,
    load_ref,
    suite_def,
    suite_options,
)


class _RefusingParser(argparse.ArgumentParser):
    """A parser whose bad input is an :class:`InputError` instead of an exit, for command
    lines that are checked before anything runs (a sweep's cells)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


def run_parser(
    suite: SuiteDef, definition: BackendDef, prog: str, strict: bool = False
) -> argparse.ArgumentParser:
    """Every flag of the run command of ``suite`` on ``definition``'s runner; ``strict``:
    bad input raises :class:`InputError` rather than exiting."""
    parser_class = _RefusingParser if strict else argparse.ArgumentParser
    parser = parser_class(prog=prog, description=f"Run {suite.title} with {definition.title}.")
    add_dataset_args(parser, suite)
    add_run_args(parser)
    add_common_run_args(parser)
    if suite.scripted_model is not None:
        parser.add_argument(
            "--scripted-model",
            metavar="NAME",
            help=f"the name the scripted model answers under (default: {suite.scripted_model}; "
            "its oracle plays it either way: without --provider the run is a scaffold)",
        )
    add_options_args(parser, grading_options(suite), "grading")
    add_options_args(parser, suite_options(suite), f"{suite.name}")
    add_options_args(parser, definition.options, definition.title)
    return parser


def spec_from_args(
    suite: SuiteDef, definition: BackendDef, args: argparse.Namespace, typed: set[str]
) -> RunSpec:
    """The run spec a parsed command line says."""
    resume = args.resume
    if resume == RESUME_OUT_DIR:
        if args.out_dir is None:
            raise InputError(
                "--resume needs the run folder: --resume RUN_DIR, or --out-dir RUN_DIR --resume"
            )
        resume = args.out_dir
    elif (
        resume is not None
        and args.out_dir is not None
        and args.out_dir.resolve() != resume.resolve()
    ):
        raise InputError(
            f"--out-dir {args.out_dir}: this run's folder is {resume.absolute()} (--resume "
            f"{args.resume}); a resumed run stays in its folder"
        )
    web, web_archive = web_of(args.web)
    if "web" in typed:
        typed = typed | {"web_archive"}
    return RunSpec(
        suite=suite.name,
        runner=definition.kind,
        dataset_file=args.dataset_file,
        split=getattr(args, "split", None),
        revision=getattr(args, "revision", None),
        selection=selection_of(args),
        provider=args.provider,
        model=args.model,
        timeout=args.timeout,
        repeat=args.repeat,
        memory_max_mb=args.memory_max_mb,
        system_prompt_file=args.system_prompt_file,
        prompt=args.prompt,
        no_empty_retry=args.no_empty_retry,
        block_answer_sources=args.block_answer_sources,
        prices=args.prices,
        scaffold=args.scaffold,
        user_agent=args.user_agent,
        scripted_model=getattr(args, "scripted_model", None),
        web=web,
        web_archive=web_archive,
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        max_cost_usd=args.max_cost_usd,
        temperature=args.temperature,
        web_trust=[str(Path(p).absolute()) for p in args.web_trust or []],
        backend=options_values(definition.options, args),
        suite_options=options_values(suite_options(suite), args),
        grading=options_values(grading_options(suite), args),
        resource_sample_ms=args.resource_sample_ms,
        workers=1 if args.workers == "auto" else args.workers,
        workers_auto=args.workers == "auto",
        executor=ExecutorSpec(kind=args.executor, address=args.ray_address),
        grade=args.grade,
        out_dir=args.out_dir,
        resume=resume,
        retry_errors=not args.no_retry_errors,
        typed=sorted(typed),
    )


def parse_run(
    suite_name: str, kind: str, argv: Sequence[str], strict: bool = False
) -> tuple[RunSpec, str]:
    """(the spec, the command's name) of a run command line."""
    suite = suite_def(suite_name)
    definition = backend_def(kind)
    prog = f"{suite.name}{definition.prog_suffix}"
    parser = run_parser(suite, definition, prog, strict)
    args = parser.parse_args(list(argv))
    return spec_from_args(suite, definition, args, typed_flags(parser, argv)), prog


def run_main(suite_name: str, kind: str) -> Main:
    """The console script running ``suite_name`` on the ``kind`` backend."""

    @entry
    def main(argv: Sequence[str] | None = None) -> int:
        argv = list(sys.argv[1:] if argv is None else argv)
        suite = suite_def(suite_name)
        if suite.serve is not None and "--serve" in argv:
            return _serve(suite, argv)
        spec, prog = parse_run(suite_name, kind, argv)
        # Imported on use: each suite's run module makes its scripts with run_main, and a
        # suite's definition (read by every registry lookup) must not load the launcher.
        from agent_benchmarks.runner.launch import launch

        return launch(spec, prog, argv)

    main.__name__ = f"{suite_name}_{kind}_run"
    return main


def _serve(suite: SuiteDef, argv: Sequence[str]) -> int:
    """``<suite>-run --serve``: the suite's site alone, until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog=f"{suite.name}-run --serve", description=f"Serve the {suite.title} site alone."
    )
    options_model = suite_options(suite)
    add_options_args(parser, options_model, "site faults")
    serve = parser.add_argument_group("serving the site alone")
    serve.add_argument("--serve", action="store_true", help="serve the site until Ctrl-C")
    serve.add_argument("--host", default="127.0.0.1", help="address to serve on")
    serve.add_argument("--port", type=non_negative_int, default=0, help="port (0: any free)")
    args = parser.parse_args(list(argv))
    options = options_model.parse(options_values(options_model, args), "site faults")
    assert suite.serve is not None
    load_ref(suite.serve)(args.host, args.port, options)
    return 0
