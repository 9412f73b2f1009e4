"""Append-only ``predictions.jsonl``: written row by row, read back tolerating a torn tail.

Each row is one JSON line written with a single ``write``, then flushed and fsynced, so a
crash leaves at most one incomplete last line. Nothing here ever rewrites a complete row.
A torn last line (no trailing newline, not valid JSON) is reported with its line number;
before appending after a crash, :func:`set_aside_torn_tail` moves the fragment to
``<file>.torn`` so the next row starts on a line of its own.

:func:`read_predictions` is the one reader of predictions files: it also reads rows written
by upstream's harness, converting each as it is read (:mod:`agent_benchmarks.upstream`),
and says how many it converted; the file itself is never changed. Rows are read with
today's task ids (:func:`current_task_id`), so a run's old rows and the rows a resume
appends to them name a task the same way.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from agent_benchmarks import upstream
from agent_benchmarks.errors import InputError
from agent_benchmarks.records import PredictionRow, Suite


def current_task_id(suite: str, task_id: str) -> str:
    """A task's id as this harness names it today.

    WebBench ids are ``webbench-N`` (upstream's, see :mod:`agent_benchmarks.webbench`);
    runs recorded before ids took that form wrote ``N`` alone. Readers of rows and
    manifests give those ids today's form, never rewriting a row, so that resuming such a
    run skips the tasks its old rows settled and grading takes an old row and a newer
    one as the same task.
    """
    if suite == "webbench" and task_id.isascii() and task_id.isdigit():
        return f"webbench-{task_id}"
    return task_id


@dataclass
class TornLine:
    line_number: int
    text: str


@dataclass
class PredictionsFile:
    """The rows of a predictions file, and the torn tail if a crash left one."""

    path: Path
    rows: list[PredictionRow] = field(default_factory=list)
    torn: TornLine | None = None
    n_imported: int = 0  # rows written by upstream's harness, converted on read

    @property
    def imported(self) -> bool:
        return self.n_imported > 0

    def warnings(self) -> list[str]:
        if self.torn is None:
            return []
        return [
            f"{self.path}:{self.torn.line_number}: torn last line (a crash mid-write?) "
            f"skipped: {self.torn.text[:80]!r}"
        ]


def read_predictions(path: Path, suite: Suite | None = None) -> PredictionsFile:
    """Read and validate every row; raise :class:`InputError` naming the first bad line.

    A row in upstream's shape is converted to ours (``suite`` says which suite when its
    fields do not); a row in neither shape is refused.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: predictions file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read predictions file: {exc.strerror}") from None
    result = PredictionsFile(path=path)
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline:
        lines.pop()  # the empty string after the final newline
    for index, raw in enumerate(lines):
        line_number = index + 1
        is_last = index == len(lines) - 1
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if is_last and not ends_with_newline:
                result.torn = TornLine(line_number, raw.decode("utf-8", "replace"))
                continue
            raise InputError(f"{path}:{line_number}: not a JSON line ({exc})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{line_number}: expected a JSON object per line")
        if upstream.is_upstream_row(obj):
            try:
                result.rows.append(upstream.convert_row(obj, suite))
            except (upstream.UpstreamRowError, ValidationError) as exc:
                problem = _describe(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(
                    f"{path}:{line_number}: a row in upstream's shape that cannot be read: "
                    f"{problem}"
                ) from None
            result.n_imported += 1
            continue
        if not upstream.is_ours(obj):
            keys = ", ".join(sorted(obj)[:8]) or "none"
            raise InputError(
                f"{path}:{line_number}: not a prediction row: neither this harness's (no "
                "schema_version or suite) nor upstream's (needs id, task, prediction and "
                f"timed_out, returncode or duration_s); its keys: {keys}"
            )
        try:
            row = PredictionRow.model_validate(obj)
        except ValidationError as exc:
            raise InputError(f"{path}:{line_number}: {_describe(exc)}") from None
        row.id = current_task_id(row.suite, row.id)
        result.rows.append(row)
    return result


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "row"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"invalid prediction row: field {where!r}: {first['msg']}{more}"


def set_aside_torn_tail(path: Path) -> TornLine | None:
    """Move an incomplete last line to ``<path>.torn`` so appending can go on safely.

    Only bytes after the last newline are moved; complete rows are never touched. The
    fragment is kept (appended to the ``.torn`` file), not thrown away.
    """
    path = Path(path)
    if not path.exists():
        return None
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n") + 1
    fragment = data[cut:]
    with open(path.with_name(path.name + ".torn"), "ab") as side:
        side.write(fragment + b"\n")
        side.flush()
        os.fsync(side.fileno())
    with open(path, "r+b") as fh:
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())
    return TornLine(
        line_number=data[:cut].count(b"\n") + 1, text=fragment.decode("utf-8", "replace")
    )


class PredictionsWriter:
    """Appends rows durably. Opened in append mode: existing rows are never rewritten."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A crash may have left half a row; move it aside so the next row starts cleanly.
        self.torn_tail = set_aside_torn_tail(self.path)
        self._fh: IO[bytes] = open(self.path, "ab")  # noqa: SIM115 (closed in close())

    def append(self, row: PredictionRow) -> None:
        line = row.model_dump_json().encode("utf-8") + b"\n"
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> PredictionsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_atomic(path: Path, text: str) -> None:
    """Write a whole JSON document (manifest, scores) via a temp file and rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
