"""A web archive: the WARC files a recording proxy wrote, and what replaying them needs.

An archive is a folder in pywb's layout (:class:`WebArchive`), so pywb records into it and
replays from it as it is, or a WACZ file (:class:`WaczArchive`), the web archive format
that packs WARC files with their index, pages and hashes into one zip:

    ARCHIVE/
      collections/web/archive/*.warc.gz   the records (WARC, ISO 28500), appended by runs
      collections/web/indexes/            pywb's index of them (rebuilt from the WARCs)
      ca/agent-benchmarks-ca.pem          the archive's own CA (certificate and key)
      ca/agent-benchmarks-ca.crt          its certificate alone: what a stack is told to trust
      config.yaml, rules.yaml, templates/ written by the proxy at each start (not content)

    NAME.wacz                              archive/*.warc.gz, indexes/, pages/, datapackage
    NAME.wacz.ca.pem                       its CA (certificate and key), beside it
    NAME.wacz.recording/                   while a run records: the folder pywb writes

The CA is made the first time the archive is recorded into and kept beside it, so every
run of the archive presents the same certificates; it is never installed anywhere else.
A WACZ keeps it beside, not inside: a WACZ is what one publishes, and the CA's private key
would let whoever has it impersonate any site to a browser that trusts the CA.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from agent_benchmarks.common.errors import InputError

COLLECTION = "web"
CA_NAME = "agent-benchmarks-ca"


@dataclass(frozen=True)
class WebArchive:
    root: Path

    @property
    def warc_dir(self) -> Path:
        return self.root / "collections" / COLLECTION / "archive"

    @property
    def index_dir(self) -> Path:
        return self.root / "collections" / COLLECTION / "indexes"

    @property
    def ca_bundle(self) -> Path:
        """The CA's certificate and private key, as pywb keeps them (never given out)."""
        return self.root / "ca" / f"{CA_NAME}.pem"

    @property
    def ca_cert(self) -> Path:
        """The CA's certificate alone: what a browser stack is told to trust."""
        return self.root / "ca" / f"{CA_NAME}.crt"

    def warcs(self) -> list[Path]:
        return sorted(self.warc_dir.glob("*.warc.gz")) if self.warc_dir.is_dir() else []

    def check_recordable(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise InputError(f"--web record {self.root}: not a folder (nor a .wacz file)")

    def check_replayable(self) -> None:
        """Refuse an archive nothing can be replayed from, naming what is missing."""
        if not self.root.is_dir():
            raise InputError(f"--web replay {self.root}: no such archive folder")
        if not self.warcs():
            raise InputError(
                f"--web replay {self.root}: no WARC files in {self.warc_dir} (record into it "
                "first with --web record)"
            )
        if not self.ca_bundle.is_file():
            raise InputError(f"--web replay {self.root}: its CA ({self.ca_bundle}) is missing")

    def describe(self) -> dict[str, object]:
        """What a manifest records of it: where, how big, and a hash of its records (the
        WARC files' names and bytes, in name order) that two runs compare."""
        return {"path": str(self.root.resolve())} | _records_digest(
            (path.name, functools.partial(open, path, "rb")) for path in self.warcs()
        )

    @contextmanager
    def working(self, mode: Literal["record", "replay"]) -> Iterator[WebArchive]:
        """The folder the proxy runs on: this one."""
        yield self

    def write_ca_cert(self) -> None:
        """The certificate part of the CA bundle pywb made, for stacks to trust."""
        text = self.ca_bundle.read_text()
        begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
        start = text.index(begin)
        self.ca_cert.write_text(text[start : text.index(end, start) + len(end)] + "\n")


def _records_digest(warcs: Iterable[tuple[str, Callable[[], IO[bytes]]]]) -> dict[str, object]:
    """The number, total size and sha256 of WARC files given as (name, opener), in name
    order: the same records hash the same in a folder and in a WACZ."""
    digest = hashlib.sha256()
    size = count = 0
    for name, opener in sorted(warcs, key=lambda item: item[0]):
        count += 1
        digest.update(name.encode() + b"\0")
        with opener() as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    return {"n_warcs": count, "size_bytes": size, "sha256": digest.hexdigest()}


_WACZ_WARCS = "archive/"


@dataclass(frozen=True)
class WaczArchive:
    """A WACZ file as the archive. pywb records into and replays from a folder, so a run
    works on one: recording, ``NAME.wacz.recording/`` beside it (the WACZ's records
    unpacked, and the new ones), packed into the WACZ when the run ends and removed (a run
    killed before that leaves it, and the next run records on into it); replaying, a
    private temp folder of the WACZ's records, removed after."""

    path: Path

    @property
    def root(self) -> Path:
        return self.path

    @property
    def ca_bundle(self) -> Path:
        return self.path.with_name(self.path.name + ".ca.pem")

    @property
    def recording_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".recording")

    def _zip(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"--web {self.path}: not a WACZ file ({exc})") from None

    def _warc_members(self, wacz: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
        return [
            m
            for m in wacz.infolist()
            if m.filename.startswith(_WACZ_WARCS)
            and m.filename.endswith((".warc.gz", ".warc"))
            and "/" not in m.filename[len(_WACZ_WARCS) :]
        ]

    def check_recordable(self) -> None:
        if self.path.exists():
            with self._zip() as wacz:
                if not self._warc_members(wacz):
                    raise InputError(f"--web record {self.path}: a zip without WARC files")

    def check_replayable(self) -> None:
        """Refuse a WACZ nothing can be replayed from, naming what is missing."""
        if not self.path.is_file():
            raise InputError(f"--web replay {self.path}: no such WACZ file")
        with self._zip() as wacz:
            if not self._warc_members(wacz):
                raise InputError(f"--web replay {self.path}: no WARC files in its {_WACZ_WARCS}")
        if not self.ca_bundle.is_file():
            raise InputError(f"--web replay {self.path}: its CA ({self.ca_bundle}) is missing")

    def describe(self) -> dict[str, object]:
        """As a folder's (the same records hash the same), from the records a recording
        in progress holds, else from the WACZ; the WACZ file's own sha256 when it exists."""
        if self.recording_dir.is_dir():
            described = WebArchive(self.recording_dir).describe()
            del described["path"]
        elif self.path.is_file():
            with self._zip() as wacz:
                described = _records_digest(
                    (_name(member), functools.partial(wacz.open, member))
                    for member in self._warc_members(wacz)
                )
        else:
            described = _records_digest(())
        described = {"path": str(self.path.resolve()), **described, "format": "wacz"}
        if self.path.is_file():
            described["wacz_sha256"] = _file_sha256(self.path)
        return described

    @contextmanager
    def working(self, mode: Literal["record", "replay"]) -> Iterator[WebArchive]:
        """The folder the proxy runs on (the caller stops the proxy before leaving)."""
        if mode == "replay":
            with tempfile.TemporaryDirectory(prefix="agent-benchmarks-wacz-") as temp:
                folder = WebArchive(Path(temp))
                self._unpack(folder)
                self._lend_ca(folder)
                yield folder
            return
        folder = WebArchive(self.recording_dir)
        if not folder.root.is_dir():  # else a killed run's recording, continued
            folder.warc_dir.mkdir(parents=True)
            if self.path.exists():
                self._unpack(folder)
        self._lend_ca(folder)
        try:
            yield folder
        finally:  # an interrupted run's records too: the proxy has stopped, its WARCs whole
            if folder.ca_bundle.is_file() and not self.ca_bundle.is_file():
                shutil.copyfile(folder.ca_bundle, self.ca_bundle)  # made by this first run
            self.pack(folder.warcs())
            shutil.rmtree(folder.root)

    def _lend_ca(self, folder: WebArchive) -> None:
        if self.ca_bundle.is_file():
            folder.ca_bundle.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.ca_bundle, folder.ca_bundle)

    def _unpack(self, folder: WebArchive) -> None:
        folder.warc_dir.mkdir(parents=True, exist_ok=True)
        with self._zip() as wacz:
            for member in self._warc_members(wacz):
                with wacz.open(member) as src, open(folder.warc_dir / _name(member), "wb") as dst:
                    shutil.copyfileobj(src, dst)

    def pack(self, warcs: list[Path]) -> None:
        """Write the WACZ of ``warcs`` (py-wacz: the index, the pages it finds, the
        datapackage with every file's hash) in place of the old one, whole or not at all."""
        if not warcs:
            return
        temp = self.path.with_name(f".{self.path.name}.writing")
        made = subprocess.run(
            [sys.executable, "-m", "wacz", "create", "--detect-pages", "-o", str(temp)]
            + [str(w) for w in warcs],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            temp.unlink(missing_ok=True)
            raise RuntimeError(f"py-wacz could not write {self.path}: {made.stderr[-800:]}")
        temp.replace(self.path)


def _name(member: zipfile.ZipInfo) -> str:
    return member.filename.rsplit("/", 1)[-1]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def open_archive(path: Path) -> WebArchive | WaczArchive:
    """The archive at ``path``: a WACZ file by its suffix, else a folder."""
    return WaczArchive(path) if path.suffix.lower() == ".wacz" else WebArchive(path)
