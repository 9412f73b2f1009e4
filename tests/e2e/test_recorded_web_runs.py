"""``--web record`` then ``--web replay`` through the real runner: ``localweb-run`` with the
REAL lightpanda agent, and ``localweb-mcp-run`` with the REAL Claude Code driving `lightpanda
mcp` and agent-browser on Debian's Chromium (their model the scripted oracle), the site over
HTTP and over HTTPS (a trustme certificate), recorded into a WARC archive by pywb, then
replayed with no network but loopback (a network namespace of its own) and nothing
listening where the site was but a counter.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trustme

from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores
from agent_benchmarks.web.archive import open_archive
from tests.e2e.offline import offline_argv
from tests.support import REPO, run_cli
from tests.temp_check import SYSTEM_TEMP

pytestmark = pytest.mark.e2e

# Read-only pages, a page whose numbers a script fetches, a cart and a form (POST bodies
# matched on replay), and a task whose page only a later run visits (left out: a miss).
RECORDED = "home-links,deal-price,add-to-cart,enquiry-submit,pagination-item"
LEFT_OUT = "catalogue-price"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rows(run_dir: Path) -> dict[str, PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return {row.id: row for row in map(PredictionRow.model_validate_json, lines)}


def _pages(site: dict[str, list[dict[str, str]]]) -> set[tuple[str, str, int]]:
    return {
        (r["method"], r["path"], r["status"])
        for r in site["requests"]
        if not r["path"].startswith(("/static/", "/api/"))
    }


def _scores(run_dir: Path) -> Scores:
    return Scores.model_validate_json((run_dir / "scores.json").read_text())


def _site_flags(scheme: str, tmp_path: Path) -> tuple[list[str], list[str]]:
    """The localweb site's flags (a fixed port, and for HTTPS a trustme certificate), and
    the recording's: the proxy trusts that certificate's test CA, passed explicitly."""
    flags = ["--site-port", str(_free_port())]
    if scheme == "http":
        return flags, []
    pem, ca_pem = tmp_path / "site.pem", tmp_path / "site-ca.pem"
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
    ca.cert_pem.write_to_path(ca_pem)
    return [*flags, "--site-tls", str(pem)], ["--web-trust", str(ca_pem)]


# Each stack's run command; every stack routes its browser through the proxy.
RUNNERS = {
    "native": ["localweb-run"],
    "claude-mcp": ["localweb-mcp-run", "--backend", "lightpanda"],
    "claude-mcp-chromium": ["localweb-mcp-run", "--backend", "agent-browser"],
    "claude-mcp-ab-lightpanda": ["localweb-mcp-run", "--backend", "agent-browser-lightpanda"],
    "claude-mcp-browser-use": ["localweb-mcp-run", "--backend", "browser-use"],
    "claude-mcp-playwright": ["localweb-mcp-run", "--backend", "playwright"],
    "claude-mcp-chrome-devtools": ["localweb-mcp-run", "--backend", "chrome-devtools"],
    "claude-mcp-cli": ["localweb-mcp-run", "--backend", "cli", "--cli", "agent-browser"],
    "codex-mcp": ["localweb-mcp-run", "--agent", "codex", "--backend", "lightpanda"],
    "codex-mcp-playwright": ["localweb-mcp-run", "--agent", "codex", "--backend", "playwright"],
    "ab-chat-chromium": ["localweb-ab-run"],
    "ab-chat-lightpanda": ["localweb-ab-run", "--engine", "lightpanda"],
}
# Both schemes for the native agent and the first Chromium stack; one each for the others;
# the archive a folder, and once a WACZ file.
CASES = [
    ("native", "http", "folder"),
    ("native", "https", "folder"),
    ("claude-mcp", "https", "folder"),
    ("claude-mcp-chromium", "http", "folder"),
    ("claude-mcp-chromium", "https", "folder"),
    ("claude-mcp-chromium", "https", "wacz"),
    ("claude-mcp-ab-lightpanda", "https", "folder"),
    ("claude-mcp-browser-use", "https", "folder"),
    ("claude-mcp-playwright", "https", "folder"),
    ("claude-mcp-chrome-devtools", "https", "folder"),
    ("claude-mcp-cli", "http", "folder"),
    ("codex-mcp", "https", "folder"),
    ("codex-mcp-playwright", "http", "folder"),
    ("ab-chat-chromium", "http", "folder"),
    ("ab-chat-lightpanda", "https", "folder"),
]
_RECORDS = ("n_warcs", "size_bytes", "sha256")


def _ca_der(archive: Path) -> bytes:
    """The archive's CA certificate (DER), from the bundle kept beside its records."""
    bundle = open_archive(archive).ca_bundle.read_text()
    begin = bundle.index("-----BEGIN CERTIFICATE-----")
    end = bundle.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    return ssl.PEM_cert_to_DER_cert(bundle[begin:end])


def _holding(root: Path, der: bytes) -> list[Path]:
    """NSS certificate databases under ``root`` that hold the certificate ``der`` (the
    sqlite file keeps it as it is)."""
    return [db for db in root.rglob("cert9.db") if der in db.read_bytes()]


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
@pytest.mark.parametrize(("runner", "scheme", "form"), CASES, ids=["-".join(c) for c in CASES])
def test_a_localweb_run_recorded_replays_offline_with_the_same_answers_and_scores(
    runner: str, scheme: str, form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    site_flags, trust_flags = _site_flags(scheme, tmp_path)
    archive = tmp_path / ("web.wacz" if form == "wacz" else "archive")
    recorded_dir, replayed_dir = tmp_path / "recorded", tmp_path / "replayed"
    script, *runner_flags = RUNNERS[runner]
    common = ["--workers", "2", *site_flags, *runner_flags]
    # The runs' temp folders (the attempts' private HOMEs, the proxy's NSS database), to
    # find any trust store left behind; short, for the browsers' socket paths (so in the
    # system temp folder itself, not in the session's own).
    temp = Path(tempfile.mkdtemp(prefix="webrun-", dir=SYSTEM_TEMP))
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    env = {"TMPDIR": str(temp)}

    done = run_cli(
        script, "--web", "record", str(archive), "--out-dir", str(recorded_dir),
        "--task-ids", RECORDED, *common, *trust_flags, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = _rows(recorded_dir)
    assert all(r.details["web"]["mode"] == "record" for r in recorded.values())
    assert all(r.details["web"]["n_requests"] > 0 for r in recorded.values())
    assert all(r.details["start_url"].startswith(f"{scheme}://") for r in recorded.values())
    manifest = Manifest.model_validate_json((recorded_dir / "manifest.json").read_text())
    web = manifest.settings["web"]
    assert web["mode"] == "record" and web["archive"]["n_warcs"] == 0
    described = open_archive(archive).describe()
    assert described["n_warcs"] >= 1
    assert {k: web["archive_after"][k] for k in _RECORDS} == {k: described[k] for k in _RECORDS}
    if form == "wacz":  # packed when the run ended; its working folder gone
        assert archive.is_file() and not archive.with_name("web.wacz.recording").exists()

    # The recording run is over: its site is gone. Replay with no network but loopback,
    # a counter listening where the site was, and one task the archive never saw.
    port = int(site_flags[site_flags.index("--site-port") + 1])
    command = [
        str(Path(sys.executable).parent / script),
        "--web", "replay", str(archive), "--out-dir", str(replayed_dir),
        "--task-ids", f"{RECORDED},{LEFT_OUT}", *common,
    ]  # fmt: skip
    offline = subprocess.run(
        offline_argv((port,), command),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ | env,
        timeout=300,
    )
    report = json.loads(offline.stdout.strip().splitlines()[-1])
    assert report["returncode"] == 0, offline.stderr[-3000:]
    assert report["bypass"] == 0  # nothing reached the site's address but through the proxy

    replayed = _rows(replayed_dir)
    for task_id, row in recorded.items():
        again = replayed[task_id]
        assert again.prediction == row.prediction, task_id
        site, site_then = again.details["site"], row.details["site"]
        assert (site["cart"], site["forms"]) == (site_then["cart"], site_then["forms"]), task_id
        # The pages the agent opened reached the site (their resources and a script's
        # fetches still in flight when the agent ended may or may not have).
        assert _pages(site) == _pages(site_then), task_id
        # So a replay misses nothing the recording saw: at most such a fetch that the
        # recording's agent ended before sending (seen once in a full run: deal-price's
        # stock lookup).
        seen = {r["path"] for r in site_then["requests"]}
        for url in again.details["web"]["misses"]:
            path = "/" + urlsplit(url).path.split("/", 3)[3]  # after /t/<task>.a1
            assert path.startswith(("/static/", "/api/")), again.details["web"]
            assert path not in seen, again.details["web"]
    left_out = replayed[LEFT_OUT].details["web"]
    assert left_out["n_misses"] >= 1
    assert left_out["misses"][0].startswith(f"{scheme}://127.0.0.1:{port}/t/{LEFT_OUT}.a1/")

    before, after = _scores(recorded_dir), _scores(replayed_dir)
    correct = {e.id: e.correct for e in after.per_task}
    assert {e.id: e.correct for e in before.per_task} == {
        k: v for k, v in correct.items() if k != LEFT_OUT
    }
    assert all(correct[t] for t in RECORDED.split(","))
    assert correct[LEFT_OUT] is False
    assert after.web is not None and after.web["mode"] == "replay"
    missed = [replayed[t].details["web"]["n_misses"] for t in recorded] + [left_out["n_misses"]]
    assert after.web["n_misses"] == sum(missed)
    assert after.web["rows_with_misses"] == sum(1 for n in missed if n)
    assert after.web["archive"]["sha256"] == described["sha256"]

    manifest = Manifest.model_validate_json((replayed_dir / "manifest.json").read_text())
    assert manifest.mode == "scaffold"  # the oracle played the model; with one: recorded
    assert manifest.settings["web"]["mode"] == "replay"
    assert manifest.settings["session"]["site"]["replayed"]
    # Replay wrote nothing into the archive.
    assert open_archive(archive).describe() == described

    # The CA went to Lightpanda as a flag (--ca-cert), to Chromium in an NSS database in
    # the attempt's private HOME; none is left after the runs, and no system store has it.
    der = _ca_der(archive)
    store = Path("/etc/ssl/certs/ca-certificates.crt")
    assert not store.exists() or ssl.DER_cert_to_PEM_cert(der).strip() not in store.read_text()
    assert not _holding(temp, der) and not _holding(recorded_dir, der)
    assert not _holding(replayed_dir, der)
    assert not _holding(Path.home() / ".pki", der)
    assert not list(temp.iterdir())  # every attempt's and the proxy's folder is gone


def _first_call(run_dir: Path) -> tuple[str, str]:
    """The first call of the run's one row and what the stack answered it."""
    (row,) = _rows(run_dir).values()
    call = row.trace[0]
    return call.name, call.error or call.output or ""


def _recorded_urls(archive: Path) -> list[str]:
    from warcio.archiveiterator import ArchiveIterator

    urls = []
    for warc in open_archive(archive).warc_dir.glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                urls.append(record.rec_headers.get_header("WARC-Target-URI") or "")
    return urls


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
@pytest.mark.parametrize("runner", ["native", "claude-mcp-chromium"])
def test_a_site_whose_certificate_nobody_trusts_is_refused_through_the_recording_proxy(
    runner: str, tmp_path: Path
) -> None:
    # An HTTPS site on 127.0.0.1 whose certificate's CA nobody was given: the stack refuses
    # it live, and through the recording proxy it meets the same certificate and the same
    # refusal (pywb's live fetch verified nothing: the proxy recorded the page and showed
    # the stack its own certificate for it, which the stack trusted).
    site_flags, _ = _site_flags("https", tmp_path)
    port = site_flags[site_flags.index("--site-port") + 1]
    script, *runner_flags = RUNNERS[runner]
    common = [*site_flags, *runner_flags, "--task-ids", "home-links", "--no-grade"]
    live, recorded, archive = tmp_path / "live", tmp_path / "recorded", tmp_path / "archive"
    done = run_cli(script, *common, "--out-dir", str(live), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    done = run_cli(
        script, *common, "--web", "record", str(archive), "--out-dir", str(recorded), timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]

    refusal = _first_call(live)
    assert "PeerFailedVerification" in refusal[1] or "ERR_CERT_AUTHORITY_INVALID" in refusal[1]
    assert _first_call(recorded) == refusal
    (row,) = _rows(recorded).values()
    refused = row.details["web"]["refused_certificates"]
    assert refused[0]["url"] == f"https://127.0.0.1:{port}/"
    assert "certificate verify failed" in refused[0]["why"]
    assert not [url for url in _recorded_urls(archive) if f"127.0.0.1:{port}" in url]
    manifest = Manifest.model_validate_json((recorded / "manifest.json").read_text())
    assert manifest.settings["web"]["trusted"]["extra"] == []


def test_web_trust_is_checked_before_anything_runs(tmp_path: Path) -> None:
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("nothing here\n")
    archive, run_dir = tmp_path / "archive", tmp_path / "run"
    done = run_cli(
        "localweb-run", "--web", "record", str(archive), "--web-trust", str(not_pem),
        "--out-dir", str(run_dir),
    )  # fmt: skip
    assert done.returncode == 2 and f"--web-trust {not_pem}: not a PEM file" in done.stderr
    done = run_cli("localweb-run", "--web-trust", str(not_pem), "--out-dir", str(run_dir))
    assert done.returncode == 2 and "--web-trust: only a recording checks" in done.stderr
    assert not run_dir.exists()


def test_replaying_no_archive_or_recording_without_one_is_refused(tmp_path: Path) -> None:
    done = run_cli("localweb-run", "--web", "replay", str(tmp_path / "none"))
    assert done.returncode == 2 and "no such archive folder" in done.stderr
    done = run_cli("localweb-run", "--web", "record")
    assert done.returncode == 2 and "--web record needs one archive" in done.stderr
