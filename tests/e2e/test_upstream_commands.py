"""Upstream's README commands for the native runner (``<suite>-run``) and the agent-browser
chat runner (``<suite>-ab-run``), run as written there.

Only what cannot run offline is substituted: the lightpanda binary's path, a local dataset
file (``--dataset-file``), and the model, which is the scripted server on 127.0.0.1
(``--base-url`` for Lightpanda, ``AI_GATEWAY_URL`` for agent-browser, and for
``GEMINI_DIRECT=1`` the test-only ``GEMINI_OPENAI_BASE_URL``), with ``--scaffold`` so the
runs say so. Every other flag, ``--workers 4 --timeout 1800`` included, is upstream's.

Lightpanda's gemini provider speaks Gemini's own API (``models/<m>:generateContent``),
which the scripted server does not: upstream's quick start (``assistantbench-run --limit
3``) is checked for what it starts and records (provider, Lightpanda's default model, the
defaults, one row per task, the requests reaching the endpoint with the key), and its rows
are model API errors.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.localweb.models import (
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    StepPolicy,
    call,
)
from agent_benchmarks.localweb.serving import BackgroundHTTPServer
from agent_benchmarks.records.schema import Manifest, PredictionRow
from tests.support import WEBBENCH_CSV, lightpanda_binary, run_cli

pytestmark = pytest.mark.e2e

GOOGLE_KEY = "AIza-e2e-dummy-google-key-5b1c"
GATEWAY_KEY = "vck-e2e-dummy-gateway-key-8d2e"
ANTHROPIC_KEY = "sk-ant-e2e-dummy-key-3f9a"


def _rows(run_dir: Path) -> list[PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


def _manifest(run_dir: Path) -> Manifest:
    return Manifest.model_validate_json((run_dir / "manifest.json").read_text())


def _files_holding(run_dir: Path, text: str) -> list[str]:
    return [str(p) for p in run_dir.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def _answer(text: str) -> ScriptedModelServer:
    return ScriptedModelServer(lambda task_id: ScriptedPolicy([FinalAnswer(text)]))


# --- the native runner ---------------------------------------------------------------------------


def test_the_quick_start_runs_gemini_with_lightpanda_s_default_model(
    assistantbench_file: Path, tmp_path: Path
) -> None:
    """``export GOOGLE_API_KEY=...; assistantbench-run --limit 3``."""
    run_dir = tmp_path / "quick"
    with _answer("55") as server:
        proc = run_cli(
            "assistantbench-run",
            "--limit",
            "3",
            *("--dataset-file", str(assistantbench_file)),
            *("--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold"),
            *("--out-dir", str(run_dir)),
            env={"GOOGLE_API_KEY": GOOGLE_KEY, "GEMINI_API_KEY": "", "ANTHROPIC_API_KEY": ""},
        )
        seen = {t: server.requests(t) for t in ("ab-number", "ab-string", "ab-json")}
    # Lightpanda asked for Gemini's API with its default model and the key, on every task.
    for task_id, requests in seen.items():
        assert requests, task_id
        assert requests[0].method == "POST"
        assert requests[0].path.endswith("/v1beta/models/gemini-3.8-flash:generateContent")
        assert requests[0].headers.get("x-goog-api-key") == GOOGLE_KEY
    manifest = _manifest(run_dir)
    assert (manifest.provider, manifest.model) == ("gemini", "gemini-3.8-flash")
    backend = manifest.settings["backend"]
    assert backend["model"] is None  # not passed: Lightpanda picks it, as upstream
    assert backend["default_model"] == "gemini-3.8-flash"
    assert manifest.timeout_s == 300 and manifest.workers == 1
    assert manifest.settings["memory_cap"]["max_mb"] == 6000
    assert manifest.settings["isolation"].startswith("a fresh lightpanda process per attempt")
    assert manifest.task_ids == ["ab-number", "ab-string", "ab-json"]
    rows = _rows(run_dir)
    assert sorted(r.id for r in rows) == sorted(manifest.task_ids)
    assert {(r.status, r.error_class) for r in rows} == {("error", "model_api")}
    assert proc.returncode == 1 and "every attempt failed" in proc.stderr, proc.stderr[-2000:]
    assert not _files_holding(run_dir, GOOGLE_KEY)


def _reproducing(
    gaia_file: Path, server: ScriptedModelServer, run_dir: Path, *extra: str
) -> list[str]:
    """Upstream's "Reproducing" line for gaia-run, paths substituted."""
    return [
        "gaia-run",
        *("--provider", "anthropic", "--model", "claude-sonnet-4-6"),
        *("--lightpanda", lightpanda_binary(), "--workers", "4", "--timeout", "1800"),
        *("--dataset-file", str(gaia_file)),
        *("--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold"),
        *("--out-dir", str(run_dir)),
        *extra,
    ]


def test_the_reproducing_command_then_resume_with_the_same_command_line(
    gaia_file: Path, tmp_path: Path
) -> None:
    """``<suite>-run --provider anthropic --model claude-sonnet-4-6 --lightpanda $LP
    --workers 4 --timeout 1800``, then the same line with ``--resume`` added."""
    run_dir = tmp_path / "gaia"
    env = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    with _answer("<ANSWER>3</ANSWER>") as server:
        server.fault_on("g1-plain", {1: Fault.malformed()})
        first = run_cli(*_reproducing(gaia_file, server, run_dir), env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        manifest = _manifest(run_dir)
        assert (manifest.provider, manifest.model) == ("anthropic", "claude-sonnet-4-6")
        assert (manifest.timeout_s, manifest.workers) == (1800, 4)
        assert manifest.settings["flags"]["lightpanda"] == lightpanda_binary()
        statuses = {r.id: r.status for r in _rows(run_dir)}
        assert statuses == {"g1-plain": "error", "g1-text": "ok", "g1-sheet": "ok", "g1-list": "ok"}

        # Another value of a defining flag is refused, naming it and both values.
        changed = run_cli(
            *_reproducing(gaia_file, server, run_dir, "--resume"), "--timeout", "600", env=env
        )
        assert changed.returncode == 2
        assert changed.stderr.strip().splitlines() == [
            "error: --timeout 600.0: this run was started with 1800.0; a resumed run keeps "
            "its settings (start a new run to change it)"
        ]
        resumed = run_cli(*_reproducing(gaia_file, server, run_dir, "--resume"), env=env)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert "resuming: 3 done, 1 to retry" in resumed.stderr

        # The dataset file changed since: refused, whatever else is the same.
        gaia_file.write_bytes(gaia_file.read_bytes() + b"\0")
        edited = run_cli(*_reproducing(gaia_file, server, run_dir, "--resume"), env=env)
    assert edited.returncode == 2 and "--dataset-file" in edited.stderr
    assert "the file changed since this run started" in edited.stderr
    rows = _rows(run_dir)
    assert [(r.id, r.status) for r in rows[4:]] == [("g1-plain", "ok")]
    assert len(_manifest(run_dir).sessions) == 2
    assert not _files_holding(run_dir, ANTHROPIC_KEY)


class UserAgentEcho(BackgroundHTTPServer):
    """A page that records the User-Agent header of every request."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        echo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                echo.seen.append(self.headers.get("User-Agent") or "")
                body = b"<html><body><h1>Drill kit</h1><p>18 V, 3-year warranty.</p></body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._handler = Handler

    def _make_server(self) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler)
        # Kept after the server stops: tests compare it with what the run recorded.
        self.url = f"http://127.0.0.1:{server.server_address[1]}/drill"
        return server


class ReadThenAnswer(StepPolicy):
    def __init__(self, url: str):
        self.url = url

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return self.call(conv, "markdown", url=self.url)
        return FinalAnswer("The drill kit is 18 V with a 3-year warranty.")


def test_webbench_user_agent_reaches_the_pages(tmp_path: Path) -> None:
    """``webbench-run --user-agent UA --limit 1``: lightpanda --user-agent, on the wire."""
    run_dir = tmp_path / "webbench"
    agent = "AgentBenchmarks/1.0 (e2e)"
    with _answer("unused") as server:
        proc = run_cli(
            "webbench-run",
            *("--user-agent", agent, "--limit", "1", "--no-grade"),
            *("--dataset-file", str(WEBBENCH_CSV)),
            *("--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold"),
            *("--out-dir", str(run_dir)),
            env={"GOOGLE_API_KEY": GOOGLE_KEY},
        )
    # As written (gemini, which the scripted server cannot play): it starts, records the
    # User-Agent as a defining flag and passes it to every attempt.
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = _rows(run_dir)
    assert (row.status, row.error_class) == ("error", "model_api")
    assert _manifest(run_dir).settings["flags"]["user_agent"] == agent
    # The scripted server speaks OpenAI and Anthropic, not Gemini's API: the same command on
    # the anthropic provider (upstream's other documented provider) shows the header.
    run_dir = tmp_path / "webbench-anthropic"
    with UserAgentEcho() as page:
        with ScriptedModelServer(lambda task_id: ReadThenAnswer(page.url)) as server:
            proc = run_cli(
                "webbench-run",
                *("--user-agent", agent, "--limit", "1", "--no-grade"),
                *("--provider", "anthropic", "--model", "claude-sonnet-4-6"),
                *("--dataset-file", str(WEBBENCH_CSV)),
                *("--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold"),
                *("--out-dir", str(run_dir)),
                env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
            )
        seen = list(page.seen)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert seen and set(seen) == {agent}
    (row,) = _rows(run_dir)
    assert row.status == "ok" and "18 V" in (row.prediction or "")
    manifest = _manifest(run_dir)
    assert manifest.settings["flags"]["user_agent"] == agent
    assert manifest.settings["backend"]["user_agent"] == agent
    assert manifest.timeout_s == 300  # upstream's WebBench default too


def test_a_user_agent_lightpanda_refuses_is_one_line(tmp_path: Path) -> None:
    proc = run_cli(
        "webbench-run",
        *("--user-agent", "Mozilla/5.0 (X11)", "--limit", "1"),
        *("--dataset-file", str(WEBBENCH_CSV), "--out-dir", str(tmp_path / "r")),
        env={"GOOGLE_API_KEY": GOOGLE_KEY},
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and '"Mozilla"' in proc.stderr
    assert not (tmp_path / "r").exists()


def test_the_mcp_runner_refuses_a_user_agent(tmp_path: Path) -> None:
    proc = run_cli(
        "webbench-mcp-run",
        *("--backend", "lightpanda", "--user-agent", "AgentBenchmarks/1.0", "--limit", "1"),
        *("--dataset-file", str(WEBBENCH_CSV), "--out-dir", str(tmp_path / "r")),
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --user-agent: webbench-mcp-run cannot set the browser's User-Agent "
        "(webbench-run and webbench-ab-run can)"
    ]


# --- the agent-browser chat runner ---------------------------------------------------------------


class KeyRecorder(BackgroundHTTPServer):
    """A pass-through in front of the scripted server that records each request's path,
    Authorization header and model: what Google's endpoint would receive."""

    def __init__(self, upstream: str):
        super().__init__()
        self.seen: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.seen.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "model": json.loads(body).get("model"),
                    }
                )
                forward = urllib.request.Request(
                    upstream + self.path,
                    data=body,
                    headers={"Content-Type": "application/json"},
                    method="POST",
                )
                try:
                    with urllib.request.urlopen(forward) as response:
                        status, payload = response.status, response.read()
                        kind = response.headers.get("Content-Type") or "application/json"
                except urllib.error.HTTPError as error:
                    status, payload = error.code, error.read()
                    kind = error.headers.get("Content-Type") or "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._handler = Handler

    def _make_server(self) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler)
        # Kept after the server stops: tests compare it with what the run recorded.
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        return server


def _ab_run(assistantbench_file: Path, run_dir: Path, *upstream: str, env: dict[str, str]):
    return run_cli(
        "assistantbench-ab-run",
        *upstream,
        *("--dataset-file", str(assistantbench_file), "--scaffold"),
        *("--out-dir", str(run_dir)),
        env={"GEMINI_DIRECT": "", "AI_GATEWAY_MODEL": "", **env},
    )


def test_chat_through_the_gateway(assistantbench_file: Path, tmp_path: Path) -> None:
    """``export AI_GATEWAY_API_KEY=...; assistantbench-ab-run --model google/gemini-3.5-flash``."""
    run_dir = tmp_path / "gateway"
    with _answer("55") as server:
        proc = _ab_run(
            assistantbench_file,
            run_dir,
            *("--model", "google/gemini-3.5-flash", "--session", "upstream-cmd"),
            env={
                "AI_GATEWAY_API_KEY": GATEWAY_KEY,
                "AI_GATEWAY_URL": f"{server.root_url}/task/{{task_id}}",
            },
        )
        models = {r.model for r in server.model_requests("ab-number")}
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert models == {"google/gemini-3.5-flash"}
    rows = _rows(run_dir)
    assert len(rows) == 3 and {(r.status, r.prediction) for r in rows} == {("ok", "55")}
    assert all(r.details["session"].startswith("upstream-cmd-") for r in rows)
    manifest = _manifest(run_dir)
    assert (manifest.provider, manifest.model) == ("google", "google/gemini-3.5-flash")
    assert manifest.timeout_s == 300
    backend = manifest.settings["backend"]
    assert backend["model_source"] == "--model" and backend["session_prefix"] == "upstream-cmd"
    assert backend["endpoint_kind"] == "gateway"
    assert manifest.settings["isolation"].startswith("fresh browser, HOME and agent-browser")
    assert not _files_holding(run_dir, GATEWAY_KEY)


@pytest.mark.parametrize("engine", ["chrome", "lightpanda"])
def test_chat_user_agent_reaches_the_pages(engine: str, tmp_path: Path) -> None:
    """``webbench-ab-run --user-agent UA --limit 1``: AGENT_BROWSER_USER_AGENT, on the wire,
    with either engine under agent-browser."""
    run_dir = tmp_path / engine
    agent = "AgentBenchmarks/1.0 (e2e chat)"
    with UserAgentEcho() as page:
        policy = ScriptedPolicy(
            [call("agent_browser", command=f"agent-browser open {page.url}"), FinalAnswer("18 V")]
        )
        with ScriptedModelServer(lambda task_id: policy) as server:
            proc = run_cli(
                "webbench-ab-run",
                *("--user-agent", agent, "--limit", "1", "--engine", engine, "--no-grade"),
                *("--model", "google/gemini-3.5-flash"),
                *("--dataset-file", str(WEBBENCH_CSV), "--scaffold", "--out-dir", str(run_dir)),
                env={
                    "AI_GATEWAY_API_KEY": GATEWAY_KEY,
                    "AI_GATEWAY_URL": f"{server.root_url}/task/{{task_id}}",
                    "GEMINI_DIRECT": "",
                },
            )
        seen = list(page.seen)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert seen and set(seen) == {agent}
    (row,) = _rows(run_dir)
    assert (row.status, row.prediction) == ("ok", "18 V")
    assert _manifest(run_dir).settings["backend"]["user_agent"] == agent


def test_chat_on_lightpanda_refuses_a_user_agent_lightpanda_would_ignore(tmp_path: Path) -> None:
    proc = run_cli(
        "webbench-ab-run",
        *("--user-agent", "Mozilla/5.0 (X11)", "--engine", "lightpanda", "--limit", "1"),
        *("--dataset-file", str(WEBBENCH_CSV), "--out-dir", str(tmp_path / "r")),
        env={"AI_GATEWAY_API_KEY": GATEWAY_KEY},
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and '"Mozilla"' in proc.stderr


def test_chat_with_gemini_direct(assistantbench_file: Path, tmp_path: Path) -> None:
    """``export GEMINI_DIRECT=1; assistantbench-ab-run --model gemini-3.5-flash`` (and the
    google/ prefix, which upstream strips): Google's endpoint, GOOGLE_API_KEY as the Bearer
    key, the model as Google names it."""
    for model in ("gemini-3.5-flash", "google/gemini-3.5-flash"):
        run_dir = tmp_path / model.replace("/", "-")
        with _answer("55") as server, KeyRecorder(server.root_url) as google:
            proc = _ab_run(
                assistantbench_file,
                run_dir,
                *("--model", model),
                env={
                    "GEMINI_DIRECT": "1",
                    "GOOGLE_API_KEY": GOOGLE_KEY,
                    "AI_GATEWAY_API_KEY": "",
                    # Test-only stand-in for https://generativelanguage.googleapis.com/v1beta/openai
                    "GEMINI_OPENAI_BASE_URL": f"{google.url}/task/{{task_id}}/v1",
                },
            )
            seen = list(google.seen)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert {s["path"] for s in seen} == {
            f"/task/{t}/v1/chat/completions" for t in ("ab-number", "ab-string", "ab-json")
        }
        assert {s["authorization"] for s in seen} == {f"Bearer {GOOGLE_KEY}"}
        assert {s["model"] for s in seen} == {"gemini-3.5-flash"}
        rows = _rows(run_dir)
        assert {(r.status, r.prediction) for r in rows} == {("ok", "55")}
        manifest = _manifest(run_dir)
        assert (manifest.provider, manifest.model) == ("google", "gemini-3.5-flash")
        backend = manifest.settings["backend"]
        assert backend["gateway_url"] == f"{google.url}/task/{{task_id}}/v1"
        assert (backend["endpoint_kind"], backend["key_env"]) == ("openai-base", "GOOGLE_API_KEY")
        assert not _files_holding(run_dir, GOOGLE_KEY)


def test_chat_model_from_ai_gateway_model_is_not_passed_as_a_flag(
    assistantbench_file: Path, tmp_path: Path
) -> None:
    """Upstream passes --model only when given; AI_GATEWAY_MODEL is chat's own default."""
    run_dir = tmp_path / "env-model"
    with _answer("55") as server:
        proc = _ab_run(
            assistantbench_file,
            run_dir,
            *("--task-ids", "ab-number"),
            env={
                "AI_GATEWAY_API_KEY": GATEWAY_KEY,
                "AI_GATEWAY_URL": f"{server.root_url}/task/{{task_id}}",
                "AI_GATEWAY_MODEL": "openai/gpt-5.5",
            },
        )
        models = {r.model for r in server.model_requests("ab-number")}
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert models == {"openai/gpt-5.5"}
    manifest = _manifest(run_dir)
    assert manifest.model == "openai/gpt-5.5"
    assert manifest.settings["backend"]["model_source"] == "AI_GATEWAY_MODEL"
    attempt = json.loads(next(run_dir.glob("attempts/ab-number.*/attempt.json")).read_text())
    assert attempt["model"] is None
    # On resume, another AI_GATEWAY_MODEL would change the model: refused.
    proc = run_cli(
        "assistantbench-ab-run",
        *("--resume", str(run_dir)),
        env={"AI_GATEWAY_API_KEY": GATEWAY_KEY, "AI_GATEWAY_MODEL": "openai/other"},
    )
    assert proc.returncode == 2 and "the model was 'openai/gpt-5.5'" in proc.stderr
