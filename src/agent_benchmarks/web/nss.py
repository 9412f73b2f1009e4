"""A private NSS certificate database trusting one CA: what Chromium on Linux trusts
beyond the system roots, read from ``$HOME/.pki/nssdb``.

    python -m agent_benchmarks.web.nss DB_DIR CA_CERT

makes ``DB_DIR`` (NSS's sql format: cert9.db, key4.db, pkcs11.txt) holding ``CA_CERT``
trusted to issue TLS server certificates, what ``certutil -N --empty-password`` then
``certutil -A -t C,, -i CA_CERT`` would make. certutil (Debian's libnss3-tools) is not
installed with Chromium, and installing it would upgrade the system's libnss3; this calls
the libnss3 Chromium itself loads, through ctypes. A run makes the database once, beside
its proxy; each attempt of a Chromium stack gets a copy in its private HOME, removed with
it, so the CA is trusted by that browser only and never system-wide.

Run as its own process: NSS keeps one database open per process, and the runner's threads
must not share it.
"""

from __future__ import annotations

import argparse
import ctypes
import ssl
import sys
from ctypes import POINTER, Structure, c_char_p, c_int, c_uint, c_ulong, c_void_p
from pathlib import Path

NICKNAME = "agent-benchmarks-ca"
# CERTCertTrust.sslFlags of certutil's "C,,": a CA trusted to issue server certificates.
_VALID_CA = 1 << 3
_TRUSTED_CA = 1 << 4
_SEC_SUCCESS = 0


class _CertTrust(Structure):
    _fields_ = [("sslFlags", c_uint), ("emailFlags", c_uint), ("objectSigningFlags", c_uint)]


class _SecItem(Structure):
    _fields_ = [("type", c_int), ("data", c_char_p), ("len", c_uint)]


_SIGNATURES = {
    "NSS_Initialize": (c_int, [c_char_p, c_char_p, c_char_p, c_char_p, c_uint]),
    "NSS_Shutdown": (c_int, []),
    "PORT_GetError": (c_int, []),
    "PK11_GetInternalKeySlot": (c_void_p, []),
    "PK11_NeedUserInit": (c_int, [c_void_p]),
    "PK11_InitPin": (c_int, [c_void_p, c_char_p, c_char_p]),
    "PK11_ImportCert": (c_int, [c_void_p, c_void_p, c_ulong, c_char_p, c_int]),
    "PK11_FreeSlot": (None, [c_void_p]),
    "CERT_GetDefaultCertDB": (c_void_p, []),
    "CERT_NewTempCertificate": (c_void_p, [c_void_p, POINTER(_SecItem), c_char_p, c_int, c_int]),
    "CERT_ChangeCertTrust": (c_int, [c_void_p, c_void_p, POINTER(_CertTrust)]),
    "CERT_DestroyCertificate": (None, [c_void_p]),
}


class NssError(RuntimeError):
    pass


def _library() -> ctypes.CDLL:
    try:
        nss = ctypes.CDLL("libnss3.so")
    except OSError as exc:
        raise NssError(f"libnss3 (a Chromium dependency) is not installed: {exc}") from None
    for name, (result, args) in _SIGNATURES.items():
        function = getattr(nss, name)
        function.restype, function.argtypes = result, args
    return nss


def make_trusting_db(db_dir: Path, ca_cert: Path) -> None:
    """Create the NSS database ``db_dir`` with ``ca_cert`` (PEM) as a trusted TLS CA."""
    try:
        der = ssl.PEM_cert_to_DER_cert(ca_cert.read_text())
    except (OSError, ValueError) as exc:
        raise NssError(f"{ca_cert}: not a PEM certificate ({exc})") from None
    try:
        db_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NssError(f"{db_dir}: cannot make the database folder ({exc})") from None
    nss = _library()

    def check(ok: bool, step: str) -> None:
        if not ok:
            raise NssError(f"{step} failed in {db_dir} (NSS error {nss.PORT_GetError()})")

    # No module database ("secmod.db" is ignored by the sql format), read-write, no flags.
    initialized = nss.NSS_Initialize(f"sql:{db_dir}".encode(), b"", b"", b"secmod.db", 0)
    check(initialized == _SEC_SUCCESS, "NSS_Initialize")
    slot = nss.PK11_GetInternalKeySlot()
    try:
        if nss.PK11_NeedUserInit(slot):
            check(nss.PK11_InitPin(slot, b"", b"") == _SEC_SUCCESS, "setting the empty password")
        item = _SecItem(0, der, len(der))
        cert = nss.CERT_NewTempCertificate(
            nss.CERT_GetDefaultCertDB(), ctypes.byref(item), None, 0, 1
        )
        check(bool(cert), "reading the CA certificate")
        try:
            imported = nss.PK11_ImportCert(slot, cert, 0, NICKNAME.encode(), 0)
            check(imported == _SEC_SUCCESS, "importing the CA certificate")
            trust = _CertTrust(_VALID_CA | _TRUSTED_CA, 0, 0)
            changed = nss.CERT_ChangeCertTrust(
                nss.CERT_GetDefaultCertDB(), cert, ctypes.byref(trust)
            )
            check(changed == _SEC_SUCCESS, "trusting the CA certificate")
        finally:
            nss.CERT_DestroyCertificate(cert)
    finally:
        nss.PK11_FreeSlot(slot)
        check(nss.NSS_Shutdown() == _SEC_SUCCESS, "NSS_Shutdown")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_benchmarks.web.nss")
    parser.add_argument("db_dir", type=Path)
    parser.add_argument("ca_cert", type=Path)
    args = parser.parse_args(argv)
    try:
        make_trusting_db(args.db_dir, args.ca_cert)
    except NssError as exc:
        print(f"agent_benchmarks.web.nss: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
