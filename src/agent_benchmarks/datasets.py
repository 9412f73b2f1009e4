"""Loading suite datasets (from the Hub or a local file) and selecting tasks.

Both paths go through the same code: the Hub path downloads a snapshot with
``huggingface_hub.snapshot_download`` (cached, revision recorded) and then reads the suite's
table file from it exactly as ``--dataset-file`` reads a local copy, with ``datasets``. A
suite declares what differs in a :class:`DatasetSpec`: the repository, which file holds a
split, the columns it needs and how a row becomes a :class:`~agent_benchmarks.records.Task`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent_benchmarks.errors import InputError
from agent_benchmarks.records import DatasetSource, Task

_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


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
    # Per-site sampling default: WebBench takes one task per site unless told otherwise.
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
    site: str | None = None  # WebBench
    sample_per_site: int | None = None  # WebBench: None = suite default, 0 = all
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
    """Rows and column names of a JSONL, JSON, Parquet or CSV file, read with ``datasets``."""
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

    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.getLogger("datasets").setLevel(logging.ERROR)
    # A private cache per read: the table is small, and a shared cache keyed on path and
    # mtime could hand back a stale copy of a file rewritten in place.
    with tempfile.TemporaryDirectory(prefix="ab-datasets-") as cache_dir:
        try:
            table = datasets.load_dataset(
                fmt, data_files=str(path), split="train", cache_dir=cache_dir
            )
        except Exception as exc:  # datasets wraps parser errors in many types
            cause = exc.__cause__ or exc
            raise InputError(f"{path}: cannot read as {fmt}: {cause}") from None
        return table.to_list(), list(table.column_names)


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
    package_root = Path(__file__).resolve().parent.parent
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
    """Deterministic: each site draws from its own RNG, so one site's tasks changing never
    changes what another site draws. Result keeps the dataset's order."""
    by_site: dict[str, list[Task]] = {}
    for task in tasks:
        by_site.setdefault(task.web_name or "", []).append(task)
    chosen: set[str] = set()
    for site, site_tasks in by_site.items():
        if len(site_tasks) <= per_site:
            chosen.update(t.id for t in site_tasks)
            continue
        rng = random.Random(f"{seed}:{site}")
        chosen.update(t.id for t in rng.sample(site_tasks, per_site))
    return [t for t in tasks if t.id in chosen]


def select_tasks(tasks: list[Task], selection: Selection, default_per_site: int = 0) -> list[Task]:
    """Apply the selection flags in a fixed order: filters, sampling or ids, then limit.

    ``--task-ids`` names tasks exactly, so it replaces per-site sampling; every id must exist
    in the dataset and pass the filters, or the selection is refused naming the id.
    """
    by_id = {t.id: t for t in tasks}
    selected = list(tasks)
    if selection.level is not None:
        selected = [t for t in selected if t.level == selection.level]
    if selection.skip_attachments:
        selected = [t for t in selected if not t.file_name]
    if selection.site is not None:
        site = selection.site.lower().removeprefix("www.")
        known = {t.web_name for t in tasks}
        if site not in known:
            raise InputError(f"--site {selection.site!r}: no task in the dataset has that site")
        selected = [t for t in selected if t.web_name == site]
    if selection.task_ids:
        unknown = [i for i in selection.task_ids if i not in by_id]
        if unknown:
            raise InputError(f"--task-ids: unknown task id {unknown[0]!r}")
        allowed = {t.id for t in selected}
        filtered = [i for i in selection.task_ids if i not in allowed]
        if filtered:
            raise InputError(
                f"--task-ids: task {filtered[0]!r} is excluded by the other selection flags"
            )
        selected = [by_id[i] for i in dict.fromkeys(selection.task_ids)]
    else:
        per_site = (
            default_per_site if selection.sample_per_site is None else selection.sample_per_site
        )
        if per_site < 0:
            raise InputError("--sample-per-site must be 0 (all tasks) or more")
        if per_site:
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
