"""A web archive: the WARC files a recording proxy wrote, and what replaying them needs.

An archive is a folder in pywb's layout, so pywb records into it and replays from it
as it is:

    ARCHIVE/
      collections/web/archive/*.warc.gz   the records (WARC, ISO 28500), appended by runs
      collections/web/indexes/            pywb's index of them (rebuilt from the WARCs)
      ca/agent-benchmarks-ca.pem          the archive's own CA (certificate and key)
      ca/agent-benchmarks-ca.crt          its certificate alone: what a stack is told to trust
      config.yaml, rules.yaml, templates/ written by the proxy at each start (not content)

The CA is made the first time the archive is recorded into and kept beside it, so every
run of the archive presents the same certificates; it is never installed anywhere else.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agent_benchmarks.errors import InputError

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
        digest = hashlib.sha256()
        size = 0
        warcs = self.warcs()
        for path in warcs:
            digest.update(path.name.encode() + b"\0")
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
        return {
            "path": str(self.root.resolve()),
            "n_warcs": len(warcs),
            "size_bytes": size,
            "sha256": digest.hexdigest(),
        }

    def write_ca_cert(self) -> None:
        """The certificate part of the CA bundle pywb made, for stacks to trust."""
        text = self.ca_bundle.read_text()
        begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
        start = text.index(begin)
        self.ca_cert.write_text(text[start : text.index(end, start) + len(end)] + "\n")
