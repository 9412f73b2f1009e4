"""``<suite>-ab-run``: the real ``agent-browser chat`` loop, on Chromium and on Lightpanda,
against real pages; only the model is scripted (a gateway speaking streamed OpenAI chat
completions, as the Vercel AI Gateway does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.backends.agent_browser_chat import LIMITS, STEP_CAP
from agent_benchmarks.gaia import SUITE as GAIA
from agent_benchmarks.localweb.models import (
    Call,
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    StepPolicy,
    ToolCallAction,
    call,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores
from agent_benchmarks.spec.prompts import RESEARCH_BRIEF
from tests.support import (
    GAIA_ROWS,
    chromium_binary,
    left_running,
    lightpanda_binary,
    no_api_keys,
    read_rows,
    run_cli,
    write_gaia_attachments,
    write_gaia_parquet,
)

pytestmark = pytest.mark.e2e

# A key the tests can look for: it must never reach a file of the run.
SECRET = "gw-e2e-secret-7f3a9c1d2b"


def _manifest(run_dir: Path) -> Manifest:
    return Manifest.model_validate_json((run_dir / "manifest.json").read_text())


def _assert_cleaned_up(run_dir: Path, rows: list[PredictionRow]) -> None:
    assert not left_running(run_dir)
    for row in rows:
        cleanup = row.details["cleanup"]
        assert cleanup["reaped"] is True, (row.id, cleanup)
        attempt = next(run_dir.glob(f"attempts/{row.id}.*/attempt.json"))
        assert not Path(json.loads(attempt.read_text())["socket_dir"]).exists()


def _localweb(run_dir: Path, *extra: str):
    return run_cli(
        "localweb-ab-run", "--workers", "2", "--out-dir", str(run_dir), *extra,
        env=no_api_keys(), timeout=240,  # 24 tasks, each a chat, a daemon and a browser
    )  # fmt: skip


def _check_scaffold_rows(rows: list[PredictionRow], engine: str) -> None:
    assert {r.backend for r in rows} == {f"agent-browser-chat/{engine}"}
    for row in rows:
        assert row.status == "ok", (row.id, row.error, row.stderr_tail[-500:])
        assert row.trace and all(c.args["command"].startswith("agent-browser ") for c in row.trace)
        assert row.trace[0].name == "open" and row.trace[0].page_url is not None
        # The scripted gateway reports usage on every reply the meter asked it for.
        assert not row.usage.estimated and row.usage.turns == len(row.trace) + 1
        assert row.details["gateway"]["usage_reported"] == row.usage.turns
        assert row.details["cleanup"]["closed"] is True
        assert row.details["cleanup"]["killed"] == 0


def _check_manifest(run_dir: Path, engine: str) -> Manifest:
    manifest = _manifest(run_dir)
    assert manifest.mode == "scaffold" and manifest.backend == f"agent-browser-chat/{engine}"
    backend = manifest.settings["backend"]
    assert backend["engine"] == engine and backend["limits"] == LIMITS
    assert manifest.programs["agent-browser"] == "agent-browser 0.41.2"
    assert len(manifest.programs["agent-browser_sha256"]) == 64
    return manifest


def test_localweb_on_chromium_passes_every_contract(tmp_path: Path) -> None:
    chromium_binary()
    run_dir = tmp_path / "chrome"
    proc = _localweb(run_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    failed = [
        (e.id, e.details.get("failed"), e.prediction) for e in scores.per_task if not e.correct
    ]
    assert scores.n_tasks == 24 and failed == []
    rows = read_rows(run_dir)
    _check_scaffold_rows(rows, "chrome")
    manifest = _check_manifest(run_dir, "chrome")
    assert manifest.programs["chromium"].startswith("Chromium ")
    _assert_cleaned_up(run_dir, rows)


def test_localweb_on_lightpanda_passes_all_but_the_shadow_root(tmp_path: Path) -> None:
    """Lightpanda's accessibility tree, which agent-browser's snapshot reads, does not
    descend into shadow roots, so the battery life the specs page renders in one is not in
    the snapshot (Chromium's is): the oracle finds no answer there, as a model would not."""
    lightpanda_binary()
    run_dir = tmp_path / "lightpanda"
    proc = _localweb(run_dir, "--engine", "lightpanda")
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    failed = [(e.id, e.prediction) for e in scores.per_task if not e.correct]
    assert scores.n_tasks == 24 and failed == [("shadow-battery", "not found")]
    rows = read_rows(run_dir)
    _check_scaffold_rows(rows, "lightpanda")
    (shadow,) = [r for r in rows if r.id == "shadow-battery"]
    assert "Battery life" not in (shadow.trace[-1].output or "")
    manifest = _check_manifest(run_dir, "lightpanda")
    assert manifest.programs["lightpanda"] and len(manifest.programs["lightpanda_sha256"]) == 64
    assert manifest.settings["backend"]["lightpanda"] == lightpanda_binary()
    _assert_cleaned_up(run_dir, rows)


def _gaia_ab(
    gaia_file: Path,
    server: ScriptedModelServer,
    run_dir: Path,
    *extra: str,
    task_id: str = "g1-plain",
):
    return run_cli(
        "gaia-ab-run",
        "--dataset-file",
        str(gaia_file),
        "--task-ids",
        task_id,
        "--model",
        "scripted/oracle",
        "--gateway-url",
        f"{server.root_url}/task/{{task_id}}",
        "--scaffold",
        "--out-dir",
        str(run_dir),
        *extra,
        env={"AI_GATEWAY_API_KEY": SECRET},
    )


def _files_holding(run_dir: Path, text: str) -> list[str]:
    return [
        str(path)
        for path in run_dir.rglob("*")
        if path.is_file() and not path.is_symlink() and text.encode() in path.read_bytes()
    ]


@pytest.mark.parametrize(
    "fault",
    [Fault.server_error(), Fault.rate_limit(), Fault(kind="malformed")],
    ids=lambda fault: fault.kind,
)
def test_a_failing_gateway_is_a_model_api_error_retried_on_resume(
    gaia_file: Path, tmp_path: Path, fault: Fault
) -> None:
    """agent-browser does not retry: the first request's failure ends the chat (a malformed
    stream silently, exit 0). The row says model_api; --resume runs it again."""
    run_dir = tmp_path / fault.kind
    policy = ScriptedPolicy(
        [call("agent_browser", command="agent-browser get url"), FinalAnswer("3")]
    )
    with ScriptedModelServer(lambda task_id: policy) as server:
        server.fault_on("g1-plain", {1: fault})
        first = _gaia_ab(gaia_file, server, run_dir)
        resumed = run_cli(
            "gaia-ab-run", "--resume", str(run_dir), env={"AI_GATEWAY_API_KEY": SECRET}
        )
        ledger = server.usage("g1-plain")
        asked = server.model_requests("g1-plain")
    assert first.returncode == 1, first.stderr[-2000:]
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    failed, retried = read_rows(run_dir)
    assert (failed.status, failed.error_class) == ("error", "model_api")
    assert failed.error and failed.error.startswith("gateway reply 1")
    assert failed.prediction is None and failed.trace == []
    assert (retried.status, retried.prediction, retried.error_class) == ("ok", "3", None)
    assert [c.name for c in retried.trace] == ["get"]
    # The ledger holds the replies the scripted gateway answered normally: the retry's two.
    assert retried.usage.model_dump(exclude={"cost_usd"}) == ledger.model_dump(exclude={"cost_usd"})
    # The answer-only variant (upstream's for this loop) opens the message (chat takes no
    # system prompt).
    first_message = asked[-2].conversation
    assert first_message is not None
    assert first_message.messages[0].text.startswith(RESEARCH_BRIEF)
    assert "<ANSWER>" not in first_message.messages[0].text
    assert _manifest(run_dir).settings["session"]["system_prompt"] == RESEARCH_BRIEF
    assert not _files_holding(run_dir, SECRET)
    assert not left_running(run_dir)


@pytest.mark.parametrize("engine", ["chrome", "lightpanda"])
def test_a_hung_gateway_is_cut_at_the_timeout_with_nothing_left(
    gaia_file: Path, tmp_path: Path, engine: str
) -> None:
    run_dir = tmp_path / f"hung-{engine}"
    with LocalSite() as site:
        url = site.task_url("elsewhere", "/catalogue")
        policy = ScriptedPolicy([call("agent_browser", command=f"agent-browser open {url}")])
        with ScriptedModelServer(lambda task_id: policy) as server:
            server.fault_on("g1-plain", {2: Fault(kind="hang")})
            proc = _gaia_ab(gaia_file, server, run_dir, "--engine", engine, "--timeout", "15")
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "timeout" and row.timed_out and 15 <= row.duration_s < 25
    assert [c.name for c in row.trace] == ["open"] and row.trace[0].error is None
    assert row.details["gateway"]["unanswered"] == [2]
    assert row.details["cleanup"]["terminated"] is True
    _assert_cleaned_up(run_dir, [row])


def test_a_chat_that_never_stops_calling_tools_hits_its_step_cap(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "loop"
    policy = ScriptedPolicy(
        [call("agent_browser", command="agent-browser get url")], on_exhausted="repeat_last"
    )
    with ScriptedModelServer(lambda task_id: policy) as server:
        proc = _gaia_ab(gaia_file, server, run_dir, "--timeout", "120")
        asked = server.request_count("g1-plain")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert asked == LIMITS[STEP_CAP] == 50
    # agent-browser's own budget spent: status budget, a wrong answer
    assert row.status == "budget" and row.details["limits_hit"] == [STEP_CAP]
    assert not row.prediction  # it never gave a final reply
    assert len(row.trace) == 50 and row.usage.turns == 50
    assert row.details["gateway"]["requests"] == 50


class TryTheBlockedPage(StepPolicy):
    """A model that goes for a page holding the task id, every way the chat allows."""

    def __init__(self, url: str):
        self.url = url

    def step(self, conv: Conversation) -> object:
        tries = [
            f"agent-browser open {self.url}",
            f"agent-browser read {self.url}",
            "agent-browser network unroute",
        ]
        if conv.turn < len(tries):
            return call("agent_browser", command=tries[conv.turn])
        return FinalAnswer("3")


def test_answer_sources_are_blocked_in_the_browser_and_out_of_it(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "blocked"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")  # holds the task id: blocked
        with ScriptedModelServer(lambda task_id: TryTheBlockedPage(url)) as server:
            proc = _gaia_ab(gaia_file, server, run_dir, "--block-answer-sources")
        reached = site.requests_for("g1-plain")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    opened, read, unrouted = row.trace
    assert opened.error == "✗ Navigation failed: net::ERR_FAILED"
    assert read.error and "'read' denied by policy" in read.error
    assert unrouted.error and "'unroute' denied by policy" in unrouted.error
    assert reached == []  # the site never saw a request for the blocked page
    # One route per answer source, plus the task id.
    assert row.details["cleanup"]["routes"] == len(GAIA.answer_sources) + 1
    blocking = _manifest(run_dir).settings["backend"]["blocking"]
    assert blocking["action_policy"] == {"deny": ["unroute", "read"]}
    assert not left_running(run_dir)


@pytest.mark.parametrize("answer", [None, "last-reply"], ids=["joined", "last-reply"])
def test_the_prediction_is_the_joined_text_or_the_last_reply(
    gaia_file: Path, tmp_path: Path, answer: str | None
) -> None:
    """Upstream took ``chat --json``'s text, every turn's words run together; --answer
    last-reply takes the loop's last reply. The row keeps both either way."""
    run_dir = tmp_path / (answer or "joined")
    narrated = ToolCallAction(
        calls=[Call(name="agent_browser", args={"command": "agent-browser get url"})],
        text="Checking the page first. ",
    )
    policy = ScriptedPolicy([narrated, FinalAnswer("3")])
    extra = ["--answer", answer] if answer else []
    with ScriptedModelServer(lambda task_id: policy) as server:
        proc = _gaia_ab(gaia_file, server, run_dir, *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    both = row.details["chat_answers"]
    assert (both["joined"], both["last_reply"]) == ("Checking the page first. 3", "3")
    expected = "3" if answer else "Checking the page first. 3"
    assert (row.status, row.prediction) == ("ok", expected)
    manifest = _manifest(run_dir)
    assert manifest.settings["backend"]["answer"] == (answer or "joined")
    assert manifest.settings["flags"]["chat_answer"] == (answer or "joined")
    assert manifest.settings["session"]["prompt"] == "answer-only"
    assert not left_running(run_dir)


# The GAIA copy's attachments (tests/support.py), and a picture the chat cannot be shown.
_PICTURE_ROW = GAIA_ROWS[1] | {
    "task_id": "g1-picture",
    "Question": "What animal is in the attached picture?",
    "file_name": "g1-picture.png",
    "file_path": "2023/validation/g1-picture.png",
}


@pytest.mark.parametrize(
    ("task_id", "shown", "given"),
    [
        ("g1-text", "g1-text.txt, as text:\n\nocelot\n", "text in the message"),
        ("g1-sheet", "g1-sheet.xlsx, as text:\n\n", "text in the message"),
        ("g1-picture", "A file comes with this task: g1-picture.png.", "file named only"),
    ],
)
def test_a_gaia_attachment_reaches_the_chat_s_model(
    tmp_path: Path, task_id: str, shown: str, given: str
) -> None:
    """chat takes no files: the attachment's text follows the task in its one message (a
    spreadsheet's cells, extracted), or a line names a file that has no text."""
    folder = tmp_path / "gaia"
    write_gaia_attachments(folder)
    (folder / "g1-picture.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    gaia_file = write_gaia_parquet(folder / "metadata.parquet", [*GAIA_ROWS, _PICTURE_ROW])
    run_dir = tmp_path / task_id
    with ScriptedModelServer(lambda _: ScriptedPolicy([FinalAnswer("ocelot")])) as server:
        proc = _gaia_ab(gaia_file, server, run_dir, task_id=task_id)
        (request,) = server.model_requests(task_id)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert request.conversation is not None
    message = request.conversation.task_text  # what agent-browser sent the model
    question = next(r["Question"] for r in [*GAIA_ROWS, _PICTURE_ROW] if r["task_id"] == task_id)
    assert question in message and shown in message
    assert message.index(question) < message.index(shown)
    if task_id == "g1-sheet":
        assert "2\ta\t20\n3\tb\t22" in message  # the cells, row by row
    (row,) = read_rows(run_dir)
    assert (row.status, row.prediction) == ("ok", "ocelot")
    (record,) = row.details["attachments"]
    assert record["original"] == row.file_name and row.file_name in shown
    assert record["given_to_agent"] == given
    assert not left_running(run_dir)
