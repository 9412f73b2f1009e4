"""The NSS database a Chromium stack trusts the archive's CA from: made with the system's
libnss3 (web/nss.py), holding the CA and nothing of this machine's stores."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

from agent_benchmarks.web.nss import NssError, make_trusting_db


def _ca_file(tmp_path: Path) -> tuple[Path, bytes]:
    ca = trustme.CA()
    path = tmp_path / "ca.crt"
    ca.cert_pem.write_to_path(path)
    return path, ssl.PEM_cert_to_DER_cert(path.read_text())


def test_the_database_holds_the_ca_in_nss_sql_format(tmp_path: Path) -> None:
    ca, der = _ca_file(tmp_path)
    db = tmp_path / "home" / ".pki" / "nssdb"
    # Its own process, as the runner makes it: NSS keeps one database open per process.
    made = subprocess.run(
        [sys.executable, "-m", "agent_benchmarks.web.nss", str(db), str(ca)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in db.iterdir()) == ["cert9.db", "key4.db", "pkcs11.txt"]
    assert der in (db / "cert9.db").read_bytes()
    (tmp_path / "other").mkdir()
    _, other_der = _ca_file(tmp_path / "other")
    assert other_der not in (db / "cert9.db").read_bytes()


def test_a_file_that_is_not_a_certificate_is_one_clear_failure(tmp_path: Path) -> None:
    bad = tmp_path / "ca.crt"
    bad.write_text("not a certificate\n")
    with pytest.raises(NssError, match=r"ca\.crt: not a PEM certificate"):
        make_trusting_db(tmp_path / "db", bad)
    made = subprocess.run(
        [sys.executable, "-m", "agent_benchmarks.web.nss", str(tmp_path / "db2"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 1
    assert made.stderr.startswith("agent_benchmarks.web.nss: ") and "Traceback" not in made.stderr


def test_a_database_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    ca, _ = _ca_file(tmp_path)
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the database folder should be
    with pytest.raises(NssError, match=re.escape(f"{blocked}: cannot make the database folder")):
        make_trusting_db(blocked, ca)
