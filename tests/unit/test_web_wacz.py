"""A WACZ file as the web archive: worked on in a folder by the proxy, packed by py-wacz
when the run ends, its records hashed as a folder's are, and refused clearly when it cannot
be used."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.web.archive import WaczArchive, WebArchive, open_archive


def _warc(path: Path, url: str, body: bytes) -> None:
    """One WARC file holding one response record (warcio, as pywb's recorder writes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        headers = [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
        record = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.0"),
        )
        writer.write_record(record)


def _record_session(wacz: WaczArchive, url: str, body: bytes, ca: bytes | None) -> None:
    """What a recording run does to the archive: work in its folder, as pywb would write."""
    with wacz.working("record") as folder:
        _warc(folder.warc_dir / f"rec-{len(folder.warcs())}.warc.gz", url, body)
        if ca is not None and not folder.ca_bundle.exists():
            folder.ca_bundle.parent.mkdir(parents=True, exist_ok=True)
            folder.ca_bundle.write_bytes(ca)


def test_a_suffix_picks_the_form() -> None:
    assert isinstance(open_archive(Path("/a/run.wacz")), WaczArchive)
    assert isinstance(open_archive(Path("/a/run.WACZ")), WaczArchive)
    assert isinstance(open_archive(Path("/a/archive")), WebArchive)


def test_two_recording_runs_append_and_the_wacz_is_valid(tmp_path: Path) -> None:
    wacz = WaczArchive(tmp_path / "web.wacz")
    _record_session(wacz, "http://site.test/a", b"<title>A</title>first", b"CA PEM")
    assert wacz.path.is_file() and not wacz.recording_dir.exists()
    assert wacz.ca_bundle.read_bytes() == b"CA PEM"  # kept beside it, not inside
    first = wacz.describe()
    _record_session(wacz, "http://site.test/b", b"<title>B</title>second", None)
    second = wacz.describe()
    assert first["n_warcs"] == 1 and second["n_warcs"] == 2
    assert second["sha256"] != first["sha256"]
    with zipfile.ZipFile(wacz.path) as zf:
        names = zf.namelist()
    assert {"datapackage.json", "datapackage-digest.json", "indexes/index.cdx.gz"} <= set(names)
    assert sorted(n for n in names if n.startswith("archive/")) == [
        "archive/rec-0.warc.gz",
        "archive/rec-1.warc.gz",
    ]
    assert not any("ca" in n.lower().split("/")[-1] for n in names)  # no CA key inside
    valid = subprocess.run(
        [sys.executable, "-m", "wacz", "validate", "-f", str(wacz.path)],
        capture_output=True,
        text=True,
    )
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_the_same_records_hash_the_same_in_a_folder_and_in_a_wacz(tmp_path: Path) -> None:
    wacz = WaczArchive(tmp_path / "web.wacz")
    _record_session(wacz, "http://site.test/a", b"page a", b"CA")
    folder = WebArchive(tmp_path / "folder")
    with wacz.working("replay") as unpacked:
        folder.warc_dir.mkdir(parents=True)
        for warc in unpacked.warcs():
            (folder.warc_dir / warc.name).write_bytes(warc.read_bytes())
        assert unpacked.ca_bundle.read_bytes() == b"CA"  # lent for the run
        temp = unpacked.root
    assert not temp.exists()  # the replay's folder is gone
    described, folder_described = wacz.describe(), folder.describe()
    for key in ("n_warcs", "size_bytes", "sha256"):
        assert described[key] == folder_described[key], key
    assert described["format"] == "wacz" and len(str(described["wacz_sha256"])) == 64
    assert wacz.describe() == described  # replaying left the WACZ as it was


def test_a_killed_recording_is_continued_by_the_next_run(tmp_path: Path) -> None:
    wacz = WaczArchive(tmp_path / "web.wacz")
    _record_session(wacz, "http://site.test/a", b"a", b"CA")
    # A run killed mid-recording leaves its folder (no pack ran).
    _warc(wacz.recording_dir / "collections" / "web" / "archive" / "rec-0.warc.gz", "x", b"a")
    _warc(wacz.recording_dir / "collections" / "web" / "archive" / "rec-9.warc.gz", "y", b"k")
    assert wacz.describe()["n_warcs"] == 2  # what the archive holds now
    _record_session(wacz, "http://site.test/b", b"b", None)
    assert wacz.describe()["n_warcs"] == 3 and not wacz.recording_dir.exists()


def test_what_cannot_be_replayed_or_recorded_into_is_named(tmp_path: Path) -> None:
    missing = WaczArchive(tmp_path / "none.wacz")
    with pytest.raises(InputError, match="no such WACZ file"):
        missing.check_replayable()
    missing.check_recordable()  # recording makes it
    not_zip = tmp_path / "bad.wacz"
    not_zip.write_text("plain text")
    for check in (WaczArchive(not_zip).check_replayable, WaczArchive(not_zip).check_recordable):
        with pytest.raises(InputError, match=re.escape(f"{not_zip}: not a WACZ file")):
            check()
    empty = tmp_path / "empty.wacz"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("datapackage.json", "{}")
    with pytest.raises(InputError, match="no WARC files in its archive/"):
        WaczArchive(empty).check_replayable()
    wacz = WaczArchive(tmp_path / "web.wacz")
    _record_session(wacz, "http://site.test/a", b"a", None)  # recorded, no CA made
    with pytest.raises(InputError, match=r"its CA \(.*web\.wacz\.ca\.pem\) is missing"):
        wacz.check_replayable()
