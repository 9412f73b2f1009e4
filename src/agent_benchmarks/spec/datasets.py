"""Loading suite datasets (from the Hub or a local file) and selecting tasks.

Both paths go through the same code: the Hub path downloads a snapshot with
``huggingface_hub.snapshot_download`` (cached, revision recorded) and then reads the suite's
table file from it exactly as ``--dataset-file`` reads a local copy, with ``datasets``. A
suite declares what differs in a :class:`DatasetSpec`: the repository, which file holds a
split, the columns it needs and how a row becomes a :class:`~agent_benchmarks.records.schema.Task`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import pickle
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import DatasetSource, Task

_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
# ``--sample-per-site all``: every task, no draw (what upstream does without the flag).
ALL_PER_SITE = "all"


@dataclass(frozen=True)
class RowContext:
    """What a row converter may need besides the row: where attachments live."""

    split: str
    base_dirs: tuple[Path, ...]  # searched in order for attachment files


@dataclass(frozen=True)
class DatasetSpec:
    suite: str
    hub_repo: str
    splits: tuple[str, ...]
    default_split: str
    required_columns: tuple[str, ...]
    # Path of the table inside the Hub snapshot for (split, config).
    hub_table: Callable[[str, str | None], str]
    to_task: Callable[[dict[str, Any], RowContext], Task]
    default_config: str | None = None
    gated: bool = False
    gated_help: str = ""
    # Extra files of a split to fetch with the table (attachments), as glob patterns.
    hub_extra_patterns: Callable[[str], list[str]] = lambda split: []
    # Rows outside the suite (WebBench keeps Category READ only) are dropped at load.
    keep_row: Callable[[dict[str, Any]], bool] = lambda row: True
    # Per-site sampling default: WebBench takes one task per site unless told otherwise
    # (0: the suite has no per-site draw).
    default_per_site: int = 0
    # A copy of the suite's rows shipped inside the package (where the dataset's licence
    # allows it; its source beside it), used when the Hub cannot be reached.
    bundled_copy: Path | None = None


@dataclass
class LoadedDataset:
    tasks: list[Task]
    source: DatasetSource
    split: str


@dataclass
class Selection:
    """Which tasks of a loaded dataset to run. Suite-specific fields are ignored elsewhere."""

    task_ids: list[str] | None = None
    limit: int | None = None
    level: int | None = None  # GAIA
    skip_attachments: bool = False  # GAIA
    site: str | None = None  # WebBench: the site name, matched exactly
    # WebBench: None = the suite's default (1), N = upstream's draw of N per site (0 = none,
    # refused as an empty selection), "all" = every task in dataset order, no draw.
    sample_per_site: int | Literal["all"] | None = None
    sample_seed: int = 0  # WebBench
    as_dict: dict[str, Any] = field(default_factory=dict)  # for the manifest


def site_of(url: str) -> str:
    """A WebBench site: the start URL's host, lowercased, without a leading ``www.``."""
    host = (urlparse(url.strip()).hostname or "").lower()
    return host.removeprefix("www.")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- reading tables ---------------------------------------------------------------------


def _check_text_file(path: Path, fmt: str) -> None:
    """Fail early, naming the line, on invalid UTF-8 and (JSONL) malformed lines."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: invalid UTF-8 (byte offset {exc.start})") from None
    if fmt == "json" and path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{number}: expected a JSON object per line")


def read_table(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows and column names of a JSONL, JSON, Parquet or CSV file, read with ``datasets``.

    ``datasets`` reads it in a child process: with pandas and pyarrow it takes about 150 MB
    and seconds to import, which the run process would hold for its whole life (every
    worker's attempts included) to read a table once. The child sends the rows back pickled,
    so they are the very values ``datasets`` gives (its type inference included)."""
    path = Path(path)
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{path}: unsupported dataset file type {path.suffix!r} "
            "(use .jsonl, .json, .parquet or .csv)"
        )
    if not path.is_file():
        raise InputError(f"{path}: dataset file not found")
    if fmt in ("json", "csv"):
        _check_text_file(path, fmt)
    key = (fmt, sha256_file(path))
    if key not in _TABLES_READ:
        cache = _table_cache_file(*key)
        pickled = _read_table_cache(cache) if cache is not None else None
        if pickled is None:
            pickled = _read_table_in_child(fmt, path)
            if cache is not None:
                _write_table_cache(cache, pickled)
        _TABLES_READ[key] = pickled
    # Unpickled afresh per call: each caller gets rows of its own.
    rows, columns = pickle.loads(_TABLES_READ[key])
    return rows, columns


# The tables read so far, pickled, by format and content digest: a process that reads the
# same table again (a resumed run's reload, a test suite) does not start a reader again.
_TABLES_READ: dict[tuple[str, str], bytes] = {}
# What the reader does to a table; raised when it changes, so older cached reads are unused.
_TABLE_READER_VERSION = 1


def _table_cache_file(fmt: str, digest: str) -> Path | None:
    """Where the rows ``datasets`` read from a table are kept for the next process: the
    user's cache, by format, content digest, datasets version and reader version, so a run
    of a table read before (WebBench's bundled copy, a --dataset-file) starts without the
    reader (2 s without bytecode caches). None when datasets is not installed."""
    try:
        version = importlib.metadata.version("datasets")
    except importlib.metadata.PackageNotFoundError:
        return None
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    name = f"{digest}.{fmt}.datasets-{version}.reader-{_TABLE_READER_VERSION}.json"
    return root / "agent-benchmarks" / "tables" / name


def _read_table_cache(cache: Path) -> bytes | None:
    try:
        rows, columns = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):  # none yet, or not one of ours
        return None
    return pickle.dumps((rows, columns), protocol=pickle.HIGHEST_PROTOCOL)


def _write_table_cache(cache: Path, pickled: bytes) -> None:
    """Keep the rows as JSON, only if JSON gives them back equal (no dates, bytes or NaN:
    such a table is read by the child each time); a cache that cannot be written is
    skipped, never an error."""
    table = pickle.loads(pickled)
    text = json.dumps(table)
    if tuple(json.loads(text)) != table:
        return
    partial = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, cache)
    except OSError:
        partial.unlink(missing_ok=True)


def _read_table_in_child(fmt: str, path: Path) -> bytes:
    child = subprocess.run(
        [sys.executable, "-c", _READ_TABLE_CHILD, fmt, str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    if child.returncode == _UNREADABLE_TABLE:
        raise InputError(child.stderr.decode("utf-8", errors="replace").strip())
    if child.returncode != 0:
        # A crash of the reader itself (not the table's fault): its own traceback tells.
        tail = child.stderr.decode("utf-8", errors="replace").strip()[-2000:]
        raise RuntimeError(
            f"reading {path} with datasets failed (exit {child.returncode}):\n{tail}"
        )
    return child.stdout


# The exit status by which the child says the table cannot be read (its message on stderr).
_UNREADABLE_TABLE = 3
_READ_TABLE_CHILD = (
    "import sys; from agent_benchmarks.spec.datasets import _read_table_here; "
    "_read_table_here(sys.argv[1], sys.argv[2])"
)


def _read_table_here(fmt: str, path: str) -> None:
    """The child's side of :func:`read_table`: the pickled (rows, columns) on stdout."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.getLogger("datasets").setLevel(logging.ERROR)
    # A private cache per read: the table is small, and a shared cache keyed on path and
    # mtime could hand back a stale copy of a file rewritten in place.
    with tempfile.TemporaryDirectory(prefix="ab-datasets-") as cache_dir:
        try:
            table = datasets.load_dataset(fmt, data_files=path, split="train", cache_dir=cache_dir)
        except Exception as exc:  # datasets wraps parser errors in many types
            cause = exc.__cause__ or exc
            print(f"{path}: cannot read as {fmt}: {cause}", file=sys.stderr)
            sys.exit(_UNREADABLE_TABLE)
        rows, columns = table.to_list(), list(table.column_names)
    sys.stdout.buffer.write(pickle.dumps((rows, columns), protocol=pickle.HIGHEST_PROTOCOL))


def _require_columns(path: Path, columns: Sequence[str], required: Sequence[str]) -> None:
    missing = [c for c in required if c not in columns]
    if missing:
        raise InputError(
            f"{path}: missing column {missing[0]!r}"
            + (f" (and {', '.join(map(repr, missing[1:]))})" if len(missing) > 1 else "")
            + f"; found {', '.join(map(repr, columns))}"
        )


def _rows_to_tasks(
    spec: DatasetSpec, path: Path, rows: list[dict[str, Any]], ctx: RowContext
) -> list[Task]:
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not spec.keep_row(row):
            continue
        try:
            task = spec.to_task(row, ctx)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: row {number}: cannot read task: {exc}") from None
        if task.id in seen:
            raise InputError(
                f"{path}: row {number}: duplicate task id {task.id!r} (first at row "
                f"{seen[task.id]})"
            )
        seen[task.id] = number
        tasks.append(task)
    return tasks


# --- loading ----------------------------------------------------------------------------


class HubUnreachable(InputError):
    """The Hub (or its cache, offline) could not give the dataset."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


def load_dataset_file(spec: DatasetSpec, path: Path, split: str) -> LoadedDataset:
    path = Path(path).expanduser().resolve()
    rows, columns = read_table(path)
    _require_columns(path, columns, spec.required_columns)
    tasks = _rows_to_tasks(spec, path, rows, RowContext(split=split, base_dirs=(path.parent,)))
    source = DatasetSource(kind="file", path=str(path), sha256=sha256_file(path))
    return LoadedDataset(tasks=tasks, source=source, split=split)


def load_dataset_hub(
    spec: DatasetSpec, split: str, config: str | None = None, revision: str | None = None
) -> LoadedDataset:
    from huggingface_hub import constants, get_token, snapshot_download
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError

    config = config or spec.default_config
    table_path = spec.hub_table(split, config)
    if spec.gated and not constants.HF_HUB_OFFLINE and not get_token():
        raise InputError(spec.gated_help)
    try:
        snapshot = Path(
            snapshot_download(
                repo_id=spec.hub_repo,
                repo_type="dataset",
                revision=revision,
                allow_patterns=[table_path, *spec.hub_extra_patterns(split)],
            )
        )
    except GatedRepoError:
        raise InputError(spec.gated_help) from None
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as exc:
        cause = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"
        raise HubUnreachable(
            f"cannot get {spec.hub_repo} from the Hugging Face Hub ({cause}); "
            "pass --dataset-file with a local copy to run offline",
            cause=cause,
        ) from None
    path = snapshot / table_path
    if not path.is_file():
        raise InputError(f"{spec.hub_repo}: snapshot {snapshot.name} has no {table_path}")
    rows, columns = read_table(path)
    _require_columns(path, columns, spec.required_columns)
    ctx = RowContext(split=split, base_dirs=(snapshot, path.parent))
    tasks = _rows_to_tasks(spec, path, rows, ctx)
    source = DatasetSource(
        kind="hub",
        hf_id=spec.hub_repo,
        config=config,
        revision=snapshot.name,  # the snapshot folder is named by its commit
        path=table_path,
        sha256=sha256_file(path),
    )
    return LoadedDataset(tasks=tasks, source=source, split=split)


def load_dataset_bundled(spec: DatasetSpec, split: str, note: str | None = None) -> LoadedDataset:
    """The copy shipped in the package; the source says so, with ``note`` (why it was used)."""
    if spec.bundled_copy is None:
        raise InputError(f"{spec.suite} ships no copy of its dataset")
    path = spec.bundled_copy
    rows, columns = read_table(path)
    _require_columns(path, columns, spec.required_columns)
    tasks = _rows_to_tasks(spec, path, rows, RowContext(split=split, base_dirs=(path.parent,)))
    package_root = Path(__file__).resolve().parents[2]  # src/: the path reads agent_benchmarks/...
    source = DatasetSource(
        kind="bundled",
        hf_id=spec.hub_repo,
        path=str(path.resolve().relative_to(package_root)),
        sha256=sha256_file(path),
        note=note,
    )
    return LoadedDataset(tasks=tasks, source=source, split=split)


def load_tasks(
    spec: DatasetSpec,
    split: str | None = None,
    dataset_file: Path | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> LoadedDataset:
    """From ``dataset_file``, else the Hub; a suite that ships a copy falls back to it when
    the Hub cannot be reached (never when a run asks for a given Hub revision)."""
    split = split or spec.default_split
    if split not in spec.splits:
        raise InputError(
            f"--split {split!r} is not a split of {spec.suite} (choose from "
            f"{', '.join(spec.splits)})"
        )
    if dataset_file is not None:
        return load_dataset_file(spec, dataset_file, split)
    try:
        return load_dataset_hub(spec, split, config=config, revision=revision)
    except HubUnreachable as exc:
        if spec.bundled_copy is None or revision is not None:
            raise
        note = f"the Hub could not be reached ({exc.cause}): the copy in the package was used"
        return load_dataset_bundled(spec, split, note=note)


# --- selection --------------------------------------------------------------------------


def _sample_per_site(tasks: list[Task], per_site: int, seed: int) -> list[Task]:
    """Upstream's per-site draw, so that a seed selects the tasks upstream's harness
    (lightpanda-io/agent-benchmarks, ``webbench/run.py``) selects, in the order it runs them.

    One ``random.Random(seed)`` serves the whole draw. The tasks are grouped by site
    (``web_name``), each group in dataset order; then, site by site in sorted order of the
    site names, the group is shuffled with ``rng.shuffle`` and its first ``per_site`` tasks
    are taken. Every group is shuffled, including groups no larger than ``per_site`` (whose
    tasks are all taken, in shuffled order) and one-task groups (which use up no random
    numbers), since the RNG's later draws depend on every earlier shuffle. The result is in
    that order: sites sorted, each site's tasks in its shuffled order.

    Deterministic for a given seed, task list and Python. Python promises a seeded
    ``random()`` sequence across releases but not ``shuffle``'s use of it; that has not
    changed since Python 3.2, and the checked-in seed-0 list
    (``tests/fixtures/webbench/upstream_seed0_one_per_site.txt``) would catch a change.
    The draw covers the tasks left by the other flags, so ``--site`` with a sample draws
    from that site's tasks alone with a fresh RNG, as upstream does; and any change to the
    task list (another table, a refreshed dataset) can change every site's draw.
    """
    by_site: dict[str, list[Task]] = {}
    for task in tasks:
        by_site.setdefault(task.web_name or "", []).append(task)
    rng = random.Random(seed)
    picked: list[Task] = []
    for site in sorted(by_site):
        group = list(by_site[site])
        rng.shuffle(group)
        picked.extend(group[:per_site])
    return picked


def _per_site(selection: Selection, default_per_site: int) -> int | None:
    """How many tasks per site to draw; None: no draw (every task, dataset order)."""
    value = selection.sample_per_site
    if value is None:
        return default_per_site or None
    if value == ALL_PER_SITE:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(
            f"--sample-per-site {value!r}: expected a whole number 0 or more, or {ALL_PER_SITE}"
        )
    if value == 0:
        raise InputError(
            "--sample-per-site 0 selects no task (0 per site, as in upstream's harness); "
            f"--sample-per-site {ALL_PER_SITE} takes every task"
        )
    return value


def _filter_site(selected: list[Task], tasks: list[Task], site: str) -> list[Task]:
    """``--site`` is the site's name exactly (upstream's rule): the start URL's host,
    lowercased, without a leading ``www.``."""
    known = {t.web_name for t in tasks}
    if site not in known:
        hint = ""
        normalised = site.strip().lower().removeprefix("www.")
        if normalised in known:
            hint = f" (site names are lowercase hosts without www.: did you mean {normalised!r}?)"
        raise InputError(f"--site {site!r}: no task in the dataset has that site{hint}")
    return [t for t in selected if t.web_name == site]


def _resolve_task_id(raw: str, by_id: dict[str, Task], suites: list[str]) -> str | None:
    """An id as the dataset names it, or without the suite's prefix where its ids carry one:
    WebBench's ids are ``webbench-N`` (upstream's), and ``N``, the ``ID`` column of
    WebBench's table, names the same task."""
    if raw in by_id:
        return raw
    for suite in suites:
        prefixed = f"{suite}-{raw}"
        if prefixed in by_id:
            return prefixed
    return None


def select_tasks(tasks: list[Task], selection: Selection, default_per_site: int = 0) -> list[Task]:
    """Apply the selection flags in a fixed order: filters, sampling or ids, then limit.

    ``--task-ids`` names tasks exactly, so it replaces per-site sampling; every id must exist
    in the dataset and pass the filters, or the selection is refused naming the id. A
    WebBench id may be given as ``webbench-N`` or as ``N``.
    """
    by_id = {t.id: t for t in tasks}
    selected = list(tasks)
    if selection.level is not None:
        selected = [t for t in selected if t.level == selection.level]
    if selection.skip_attachments:
        selected = [t for t in selected if not t.file_name]
    if selection.site is not None:
        selected = _filter_site(selected, tasks, selection.site)
    if selection.task_ids:
        suites = sorted({t.suite for t in tasks})
        resolved: list[str] = []
        for raw in selection.task_ids:
            task_id = _resolve_task_id(raw, by_id, suites)
            if task_id is None:
                raise InputError(f"--task-ids: unknown task id {raw!r}")
            resolved.append(task_id)
        allowed = {t.id for t in selected}
        filtered = [i for i in resolved if i not in allowed]
        if filtered:
            raise InputError(
                f"--task-ids: task {filtered[0]!r} is excluded by the other selection flags"
            )
        selected = [by_id[i] for i in dict.fromkeys(resolved)]
    else:
        per_site = _per_site(selection, default_per_site)
        if per_site is not None:
            selected = _sample_per_site(selected, per_site, selection.sample_seed)
    if selection.limit is not None:
        if selection.limit < 1:
            raise InputError("--limit must be at least 1")
        selected = selected[: selection.limit]
    if not selected:
        raise InputError("the selection is empty: no task matches the selection flags")
    missing = [t for t in selected if t.file_name and t.attachment_path is None]
    if missing:
        raise InputError(
            f"task {missing[0].id}: attachment {missing[0].file_name!r} not found next to the "
            "dataset (pass --skip-attachments to leave such tasks out)"
        )
    return selected


def find_attachment(ctx: RowContext, file_name: str, file_path: str | None) -> Path | None:
    """Locate an attachment: by its recorded path, then by name, in each base folder."""
    candidates = [p for p in (file_path, file_name) if p]
    for base in ctx.base_dirs:
        for candidate in candidates:
            path = base / candidate
            if path.is_file():
                return path.resolve()
    return None
