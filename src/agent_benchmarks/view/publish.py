"""The run browser's pages written as files beside the runs, or served live on 127.0.0.1.

Written: into one folder of the browser's own (``view/`` in the results folder, or beside a
run folder given alone), marked as the browser's by a file in it, so a folder it did not
write is never written over, and never inside a run folder (nothing but scores.json is
ever written into one). Each pass writes every page again and removes the pages of runs
that are gone. A page that cannot be made (its predictions rewritten while being read) is
named, and the others are still written.

Served (``--serve``): a page is made on each request from the folder as it is then, so a
running run's pages follow its rows; those pages, and the index, reload themselves while
the run is going (no script: a refresh header).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.view.runs import RUN_MARKERS, RunSummary, find_runs, summarise
from agent_benchmarks.view.site import index_page, run_href, run_pages

MARKER = ".agent-benchmarks-view"


def is_run_folder(folder: Path) -> bool:
    return any((folder / marker).is_file() for marker in RUN_MARKERS)


def default_out(root: Path) -> Path:
    """``view/`` in the results folder; beside it when the folder given is a run itself."""
    return (root.parent if is_run_folder(root) else root) / "view"


def check_out(out: Path, runs: Iterable[Path]) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise InputError(
            f"--out {out}: a folder agent-benchmarks view did not write (no {MARKER} in "
            "it); choose another with --out"
        )
    resolved = out.resolve()
    for run in runs:
        if resolved == run.resolve() or run.resolve() in resolved.parents:
            raise InputError(
                f"--out {out}: inside the run folder {run}; a run folder holds only the "
                "run's own files: choose a folder outside it"
            )


def summaries(root: Path, out: Path | None) -> list[RunSummary]:
    """Every run under ``root``, newest first."""
    found = [summarise(run_dir, root) for run_dir in find_runs(root, skip=out)]
    return sorted(found, key=lambda s: (s.started, s.rel), reverse=True)


def _write_page(path: Path, pieces: Iterator[str]) -> None:
    """Written whole via a temp file and a rename: an open page never shows half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(pieces)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_site(root: Path, out: Path) -> tuple[list[RunSummary], int, list[str]]:
    """Write every page; the runs, the number of pages written, and the pages that could
    not be made (with why)."""
    runs = find_runs(root, skip=out)
    check_out(out, runs)
    listed = summaries(root, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(f"pages of agent-benchmarks view for {root.resolve()}\n")
    written = {"index.html"}
    _write_page(out / "index.html", index_page(listed, str(root), live=False))
    failed = []
    for summary in listed:
        for path, page in run_pages(summary):
            try:
                _write_page(out / path, page())
            except InputError as exc:
                failed.append(f"{path}: {exc}")
                continue
            written.add(path)
    _remove_stale(out, written)
    return listed, len(written), failed


def _remove_stale(out: Path, written: set[str]) -> None:
    """Pages of runs (or attempts) that are gone; then the folders left empty."""
    for page in (out / "runs").rglob("*.html") if (out / "runs").exists() else ():
        if page.relative_to(out).as_posix() not in written:
            page.unlink()
    for folder in (
        sorted((out / "runs").rglob("*"), reverse=True) if (out / "runs").exists() else ()
    ):
        if folder.is_dir() and not any(folder.iterdir()):
            shutil.rmtree(folder, ignore_errors=True)


# --- live --------------------------------------------------------------------------------------


class _Site:
    """The pages of the folder as it is at each request."""

    def __init__(self, root: Path):
        self.root = root

    def page(self, path: str) -> Iterator[str] | None:
        path = path.lstrip("/") or "index.html"
        if path == "index.html":
            return index_page(summaries(self.root, None), str(self.root), live=True)
        if not path.startswith("runs/") or ".." in path.split("/"):
            return None
        for summary in self._run_of(path):
            for page_path, page in run_pages(summary, live=True):
                if page_path == path:
                    return page()
        return None

    def _run_of(self, path: str) -> Iterator[RunSummary]:
        """The run a page path belongs to (its folder is the path's middle part)."""
        parts = path.split("/")[1:]
        for end in range(len(parts) - 1, 0, -1):
            rel = "/".join(parts[:end])
            folder = self.root if rel == "_" else self.root / rel
            if is_run_folder(folder):
                summary = summarise(folder, self.root)
                if run_href(summary).rpartition("/")[0] == "runs/" + rel:
                    yield summary
                return


def _handler(site: _Site) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                pieces = site.page(unquote(urlsplit(self.path).path))
                body = None if pieces is None else "".join(pieces).encode("utf-8")
            except InputError as exc:
                self._send(500, f"cannot make this page: {exc}\n".encode(), "text/plain")
                return
            if body is None:
                self._send(404, b"no such page\n", "text/plain")
                return
            self._send(200, body, "text/html")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per request would bury the terminal

    return Handler


def make_server(root: Path, port: int = 0) -> ThreadingHTTPServer:
    """The live browser on 127.0.0.1 (port 0: the system picks a free one)."""
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), _handler(_Site(root)))
    except OSError as exc:
        raise InputError(f"--port {port}: cannot listen on 127.0.0.1: {exc.strerror}") from None
    server.daemon_threads = True
    return server
