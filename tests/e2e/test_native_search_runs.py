"""``gaia-run --search tavily``: the real ``lightpanda agent`` with its own ``search`` tool
pinned to Tavily, answered by the local Tavily stand-in; only the model is scripted.

Lightpanda 1.0.2 asks https://api.tavily.com itself: no base-URL setting, and neither
``--http-proxy`` nor HTTPS_PROXY reaches its search client (both tried: the request still
resolves api.tavily.com and fails offline with UnknownHostName). So the test gives lightpanda
a world where that name is this machine: ``--lightpanda`` is a wrapper that runs the real
binary in a private mount namespace (``unshare -m``) whose /etc/hosts maps api.tavily.com to
127.0.0.1 and whose CA bundle is a test CA, and the stand-in serves HTTPS on 127.0.0.1:443
with a certificate from that CA. Nothing outside the namespace changes. It needs root (the
port, the namespace), as the project's machines and CI have.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agent_benchmarks.backends.lightpanda import bundled_binary
from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    call,
)
from agent_benchmarks.localweb.tavily import TavilyStandIn
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.search import BASE_URL_ENV
from tests.support import REPO

pytestmark = pytest.mark.e2e

KEY = f"tvly-native-e2e-{uuid.uuid4().hex}"
MODEL = "scripted-native-search"
# A copy of the suite's answers, which --block-answer-sources blocks.
DATASET_PAGE = "https://huggingface.co/datasets/gaia-benchmark/GAIA/viewer"
RESULTS = [
    {"title": "Band history", "url": "https://bands.example.org/history", "content": "1990s."},
    {"title": "GAIA (answers)", "url": DATASET_PAGE, "content": "Final answer: 3"},
    {"title": "Discography", "url": "https://bands.example.org/albums", "content": "3 albums."},
]


def _tavily_world(folder: Path) -> tuple[Path, tuple[Path, Path]]:
    """A lightpanda wrapper that sees api.tavily.com at 127.0.0.1 and trusts a test CA,
    and that CA's certificate (chain, key) for api.tavily.com."""
    folder.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=agent-benchmarks test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tavily.key", "-out", "tavily.csr",
        "-subj", "/CN=api.tavily.com",
    )  # fmt: skip
    (folder / "ext.cnf").write_text(
        "subjectAltName=DNS:api.tavily.com\nbasicConstraints=CA:FALSE\n"
        "extendedKeyUsage=serverAuth\n"
    )
    openssl(
        "x509", "-req", "-in", "tavily.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tavily.pem", "-days", "1", "-extfile", "ext.cnf",
    )  # fmt: skip
    (folder / "hosts").write_text("127.0.0.1 localhost\n127.0.0.1 api.tavily.com\n")
    wrapper = folder / "lightpanda"
    mounts = (
        f"mount --bind {folder / 'hosts'} /etc/hosts && "
        f"mount --bind {folder / 'ca.pem'} /etc/ssl/certs/ca-certificates.crt && "
        'exec "$0" "$@"'
    )
    wrapper.write_text(f"#!/bin/sh\nexec unshare -m sh -c '{mounts}' {bundled_binary()} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper, (folder / "tavily.pem", folder / "tavily.key")


def _native_search_run(
    gaia_file: Path, tmp_path: Path, *extra: str
) -> tuple[PredictionRow, list, Manifest]:
    """``gaia-run --search tavily`` on g1-plain, the model searching once then answering;
    its row, what the stand-in was asked, and the manifest."""
    assert os.geteuid() == 0, "this test needs root: port 443 and a private mount namespace"
    wrapper, tls = _tavily_world(tmp_path / "world")
    run_dir = tmp_path / "run"
    policy = ScriptedPolicy([call("search", query="band studio albums"), FinalAnswer("3")])
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"OPENAI_API_KEY": API_KEY, "TAVILY_API_KEY": KEY}
    with (
        TavilyStandIn(lambda query: RESULTS, api_key=KEY, port=443, tls=tls) as tavily,
        # The harness checks the key before the run (GET /usage) from outside lightpanda's
        # namespace, where api.tavily.com is the real one: this stand-in answers it.
        TavilyStandIn(lambda query: RESULTS, api_key=KEY) as key_check,
        ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as model,
    ):
        env[BASE_URL_ENV] = key_check.base_url
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "gaia-run"), "--search", "tavily",
                "--lightpanda", str(wrapper), "--provider", "openai_compatible",
                "--model", MODEL, "--base-url", f"{model.root_url}/task/{{task_id}}/v1",
                "--scaffold", "--no-grade", "--prompt", "answer-only", "--timeout", "60",
                "--dataset-file", str(gaia_file), "--task-ids", "g1-plain",
                "--out-dir", str(run_dir), *extra,
            ],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=180,
        )  # fmt: skip
        searched = list(tavily.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "3"), row.stderr_tail[-500:]
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert json.dumps(manifest.model_dump(mode="json")).count(KEY) == 0
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    return row, searched, manifest


def test_lightpandas_own_search_pinned_to_tavily(gaia_file: Path, tmp_path: Path) -> None:
    row, searched, manifest = _native_search_run(gaia_file, tmp_path)
    # Lightpanda's own request, with our key: its parameters are its own, not web_search's.
    (request,) = searched
    assert request.key_matched
    assert request.body == {"query": "band studio albums", "max_results": 10}
    (search,) = row.trace
    assert search.name == "search" and search.args == {"query": "band studio albums"}
    # Its spend, as the web_search server's rows record it: one basic search, one credit;
    # without blocking, every result the stand-in returned was shown, none dropped.
    spend = row.details["search"]
    assert (spend["n_calls"], spend["credits"], spend["errors"]) == (1, 1, 0)
    (made,) = spend["calls"]
    assert made["query"] == "band studio albums"
    assert made["urls"] == [r["url"] for r in RESULTS] and spend["dropped"] == 0
    assert search.output is not None
    assert all(r["url"] in search.output for r in RESULTS)
    backend = manifest.settings["backend"]
    assert (backend["search_setting"], backend["search_engine"]) == ("tavily", "tavily")
    assert backend["search"] == {"engine": "tavily", "chosen_by": "--search-engine tavily"}
    assert manifest.settings["flags"]["search"] == "tavily"


def test_lightpandas_own_search_drops_blocked_results_itself(
    gaia_file: Path, tmp_path: Path
) -> None:
    # The stand-in returns the dataset's own page among the results: with
    # --block-answer-sources, Lightpanda (not the harness) drops it before the model sees
    # it, renumbers the rest and says nothing; the row records what was shown, and that
    # how many were dropped is not known.
    row, _, manifest = _native_search_run(gaia_file, tmp_path, "--block-answer-sources")
    (search,) = row.trace
    assert search.output is not None and DATASET_PAGE not in search.output
    made = row.details["search"]["calls"][0]
    shown = [r["url"] for r in RESULTS if r["url"] != DATASET_PAGE]
    assert made["urls"] == shown
    assert made["dropped"] is None and made["shown_blocked"] == []
    assert made["dropped_at_most"] == 10 - len(shown)
    spend = row.details["search"]
    assert spend["dropped"] is None
    assert "reports no count" in spend["dropped_rule"]
    assert "dropped by Lightpanda" in manifest.settings["backend"]["search_via"]
