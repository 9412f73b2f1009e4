"""Append-only ``predictions.jsonl``: written row by row, read back tolerating a torn tail.

Each row is one JSON line written with a single ``write``, then flushed and fsynced, so a
crash leaves at most one incomplete last line. Nothing here ever rewrites a complete row.
A torn last line (no trailing newline, not valid JSON) is reported with its line number;
before appending after a crash, :func:`set_aside_torn_tail` moves the fragment to
``<file>.torn`` so the next row starts on a line of its own.

:class:`PredictionsStream` is the one reader of predictions files (:func:`read_predictions`
gathers its rows in a list). It reads one line at a time, so memory does not grow with the
file. It also reads rows written by upstream's harness, converting each as it is read
(:mod:`agent_benchmarks.records.upstream`), and says how many it converted; the file itself is
never changed. Rows are read with today's task ids (:func:`current_task_id`), so a run's
old rows and the rows a resume appends to them name a task the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from pydantic import ValidationError

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records import upstream
from agent_benchmarks.records.schema import PredictionRow, Suite


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


class RowRead(NamedTuple):
    """One row as read: where its line starts in the file and how many bytes it takes."""

    row: PredictionRow
    offset: int
    size: int
    line_number: int


# Our rows always carry this key (PredictionsWriter writes every field); a line without it
# is read the slow way, which also tells upstream's rows and malformed lines apart.
_OUR_ROW_MARK = b'"schema_version"'


class PredictionsStream:
    """The rows of a predictions file, read one line at a time.

    Memory is one row at a time, whatever the size of the file; iterating again reads the
    file again. After a full pass, ``torn``, ``n_imported``, ``n_rows`` and ``sha256`` (of
    the whole file, torn tail included) describe what was read. ``tool_outputs=False`` drops
    each tool call's ``output`` as the row is read, for readers that never look at it.
    """

    def __init__(
        self, path: Path, suite: Suite | None = None, *, tool_outputs: bool = True
    ) -> None:
        self.path = Path(path)
        self.suite = suite
        self.tool_outputs = tool_outputs
        self.torn: TornLine | None = None
        self.n_imported = 0
        self.n_rows = 0
        self.sha256: str | None = None

    @property
    def imported(self) -> bool:
        return self.n_imported > 0

    def warnings(self) -> list[str]:
        return _torn_warnings(self.path, self.torn)

    def __iter__(self) -> Iterator[PredictionRow]:
        for read in self.reads():
            yield read.row

    def reads(self) -> Iterator[RowRead]:
        """Every row with its place in the file; raises :class:`InputError` on a bad line."""
        self.torn, self.n_imported, self.n_rows = None, 0, 0
        digest = hashlib.sha256()
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 (closed below, also when abandoned)
        except FileNotFoundError:
            raise InputError(f"{self.path}: predictions file not found") from None
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read predictions file: {exc.strerror}") from None
        with fh:
            offset = 0
            for line_number, raw in enumerate(fh, start=1):
                digest.update(raw)
                size = len(raw)
                at = offset
                offset += size
                if not raw.strip():
                    continue
                # Only the last line can lack its newline: a crash mid-write tears it.
                row = self._parse(raw, line_number, last_unterminated=not raw.endswith(b"\n"))
                if row is None:
                    continue
                self.n_rows += 1
                yield RowRead(row, at, size, line_number)
        self.sha256 = digest.hexdigest()

    def row_at(self, offset: int, line_number: int, expected: tuple[str, int]) -> PredictionRow:
        """The row whose line starts at ``offset`` (from :meth:`reads`), read again; an
        InputError if it is no longer the (task, attempt) ``expected`` there (the file was
        rewritten since)."""
        n_imported = self.n_imported  # counted when the row was first read
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            row = self._parse(fh.readline(), line_number, last_unterminated=False)
        self.n_imported = n_imported
        if row is None or (row.id, row.attempt) != expected:
            task_id, attempt = expected
            raise InputError(
                f"{self.path}:{line_number}: changed since it was read (task {task_id!r} "
                f"attempt {attempt} is no longer there)"
            )
        return row

    def _parse(self, raw: bytes, line_number: int, last_unterminated: bool) -> PredictionRow | None:
        where = f"{self.path}:{line_number}"
        if _OUR_ROW_MARK in raw:
            try:
                row = PredictionRow.model_validate_json(raw)
            except ValidationError:
                pass  # read again below, which names what is wrong (or the torn tail)
            else:
                if not self.tool_outputs:
                    for call in row.trace:
                        # None is a valid output: set without validating each call again.
                        call.__dict__["output"] = None
                return _with_current_id(row)
        try:
            obj = json.loads(raw.decode("utf-8"))  # strict: a BOM or bad bytes are refused
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if last_unterminated:
                self.torn = TornLine(line_number, raw.decode("utf-8", "replace"))
                return None
            raise InputError(f"{where}: not a JSON line ({exc})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object per line")
        if not self.tool_outputs:
            for call in obj.get("trace") or ():
                if isinstance(call, dict):
                    call.pop("output", None)
        if upstream.is_upstream_row(obj):
            try:
                row = upstream.convert_row(obj, self.suite)
            except (upstream.UpstreamRowError, ValidationError) as exc:
                problem = _describe(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(
                    f"{where}: a row in upstream's shape that cannot be read: {problem}"
                ) from None
            self.n_imported += 1
            return row
        if not upstream.is_ours(obj):
            keys = ", ".join(sorted(obj)[:8]) or "none"
            raise InputError(
                f"{where}: not a prediction row: neither this harness's (no "
                "schema_version or suite) nor upstream's (needs id, task, prediction and "
                f"timed_out, returncode or duration_s); its keys: {keys}"
            )
        try:
            row = PredictionRow.model_validate(obj)
        except ValidationError as exc:
            raise InputError(f"{where}: {_describe(exc)}") from None
        return _with_current_id(row)


def _with_current_id(row: PredictionRow) -> PredictionRow:
    current = current_task_id(row.suite, row.id)
    if current != row.id:  # assigning validates: only when the id changes
        row.id = current
    return row


def _torn_warnings(path: Path, torn: TornLine | None) -> list[str]:
    if torn is None:
        return []
    return [
        f"{path}:{torn.line_number}: torn last line (a crash mid-write?) "
        f"skipped: {torn.text[:80]!r}"
    ]


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

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def warnings(self) -> list[str]:
        return _torn_warnings(self.path, self.torn)


def read_predictions(path: Path, suite: Suite | None = None) -> PredictionsFile:
    """Read and validate every row into memory; raise :class:`InputError` naming the first
    bad line. For files of any size, iterate a :class:`PredictionsStream` instead.

    A row in upstream's shape is converted to ours (``suite`` says which suite when its
    fields do not); a row in neither shape is refused.
    """
    stream = PredictionsStream(path, suite)
    rows = list(stream)
    return PredictionsFile(
        path=stream.path, rows=rows, torn=stream.torn, n_imported=stream.n_imported
    )


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


def write_json_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write a whole JSON document (manifest, scores) via a temp file and rename; ``text``
    may come in pieces, so a big document is never one string in memory."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines([text] if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a document that failed half-way leaves nothing
        raise
