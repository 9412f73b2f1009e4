"""A GAIA attachment the MCP agent cannot be shown as text is named to it: real Claude Code
with ``lightpanda mcp``, the scripted Anthropic server recording what it received. (Text
and spreadsheet attachments over MCP: tests/e2e/test_mcp_upstream.py; agent-browser's chat:
tests/e2e/test_ab_chat_runner.py.)"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
)
from agent_benchmarks.records.schema import PredictionRow
from tests.support import GAIA_ROWS, run_cli, write_gaia_parquet

pytestmark = pytest.mark.e2e


def _png(path: Path) -> None:
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("inner.txt", "ocelot")


@pytest.mark.parametrize(
    ("name", "write", "action"),
    [
        # Passed to the native agent's --attach as it is; Claude Code has no way to open it.
        ("g1-scan.png", _png, "attached"),
        # Skipped for every agent (no text, a type no agent takes): still named to it.
        ("g1-bundle.zip", _zip, "skipped"),
    ],
    ids=["image", "zip"],
)
def test_the_mcp_agent_is_told_of_a_file_it_cannot_open(
    tmp_path: Path, name: str, write: Callable[[Path], None], action: str
) -> None:
    folder = tmp_path / "gaia"
    folder.mkdir()
    write(folder / name)
    task_id = name.split(".")[0]
    row = GAIA_ROWS[1] | {
        "task_id": task_id,
        "Question": "What animal does the attached file show?",
        "file_name": name,
        "file_path": f"2023/validation/{name}",
    }
    gaia_file = write_gaia_parquet(folder / "metadata.parquet", [row])
    run_dir = tmp_path / "run"
    with ScriptedModelServer(lambda _: ScriptedPolicy([FinalAnswer("ocelot")])) as server:
        proc = run_cli(
            "gaia-mcp-run", "--backend", "lightpanda", "--dataset-file", str(gaia_file),
            "--base-url", f"{server.root_url}/task/{{task_id}}",
            "--auth", "api-key", "--scaffold", "--out-dir", str(run_dir),
            env={"ANTHROPIC_API_KEY": API_KEY},
        )  # fmt: skip
        first = server.model_requests(task_id)[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert first.conversation is not None
    message = first.conversation.task_text  # what Claude Code sent the model
    line = (
        f"A file comes with this task: {name}. You have no tool that can open it; "
        "answer from the question and the web."
    )
    assert row["Question"] in message and line in message
    assert message.index(row["Question"]) < message.index(line)
    (line_of_row,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    (record,) = PredictionRow.model_validate_json(line_of_row).details["attachments"]
    assert (record["original"], record["action"]) == (name, action)
    assert record["given_to_agent"] == "file named only"
