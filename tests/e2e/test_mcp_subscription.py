"""A Claude subscriber's MCP run (issue 15): the real Claude Code from node_modules, the real
``lightpanda mcp`` and a real page, with only the model scripted. The subscriber's login (a
stand-in, in the two forms Claude Code takes) reaches the model's endpoint as the
credential of every request, and is written nowhere: not in the run folder, not in any
folder of the test's, even when the model puts it in a URL it opens.

A subscriber with no login at all is refused before the first task in
``test_mcp_upstream.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path

import pytest

from agent_benchmarks.isolation.scratch import PREFIX, run_key
from agent_benchmarks.localweb.models import Conversation, FinalAnswer, StepPolicy
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records.schema import Manifest, PredictionRow
from tests.fixtures.record import CapturingServer
from tests.support import left_running, run_cli

pytestmark = pytest.mark.e2e

# Neither looks like a key to the redaction patterns (no sk-, no Bearer in the text), so
# only the harness knowing these very values can keep them out of what it writes.
ACCESS_TOKEN = f"oat-e2e-access-{uuid.uuid4().hex}"
REFRESH_TOKEN = f"ort-e2e-refresh-{uuid.uuid4().hex}"
ENV_TOKEN = f"oat-e2e-env-{uuid.uuid4().hex}"


class BrowseThenLeak(StepPolicy):
    """Opens a page through the MCP server with the secrets it was told in the URL (as if
    a model had found them and passed them on), then answers."""

    def __init__(self, url: str, secrets: list[str]) -> None:
        self.url = f"{url}?seen={'+'.join(secrets)}"

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return self.call(conv, "goto", url=self.url)
        return FinalAnswer("<ANSWER>3</ANSWER>")


def _home_with_credentials(home: Path) -> Path:
    """A HOME as `claude` and /login leave it: the login in ~/.claude/.credentials.json."""
    login = {
        "claudeAiOauth": {
            "accessToken": ACCESS_TOKEN,
            "refreshToken": REFRESH_TOKEN,
            "expiresAt": 4102444800000,  # 2100: Claude Code does not try to refresh it
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max",
        }
    }
    credentials = home / ".claude" / ".credentials.json"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(json.dumps(login))
    return credentials


def _files_holding(folder: Path, secret: str, but: Path | None = None) -> list[str]:
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file() and path != but and secret.encode() in path.read_bytes()
    ]


@pytest.mark.parametrize("login", ["credentials-file", "oauth-token"])
def test_a_subscribers_login_reaches_the_model_and_is_written_nowhere(
    gaia_file: Path, tmp_path: Path, login: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    env |= {"HOME": str(home), "CLAUDE_CODE_OAUTH_TOKEN": ""}
    if login == "credentials-file":
        stand_in, secrets = _home_with_credentials(home), [ACCESS_TOKEN, REFRESH_TOKEN]
        sent = ACCESS_TOKEN
    else:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = sent = ENV_TOKEN
        stand_in, secrets = None, [ENV_TOKEN]
    run_dir = tmp_path / "run"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")
        with CapturingServer(lambda _: BrowseThenLeak(url, secrets)) as server:
            proc = run_cli(
                "gaia-mcp-run", "--backend", "lightpanda", "--dataset-file", str(gaia_file),
                "--task-ids", "g1-plain", "--base-url", f"{server.root_url}/task/{{task_id}}",
                "--auth", "subscription", "--scaffold", "--out-dir", str(run_dir),
                env=env,
            )  # fmt: skip
            captured = list(server.captured)
        visits = site.requests_for("g1-plain")
    assert proc.returncode == 0, proc.stderr[-3000:]

    # Every model request carried the login as Claude Code sends a subscriber's: a bearer
    # token, no API key.
    model_calls = [(rec, headers) for rec, headers, _ in captured if rec.route == "messages"]
    assert len(model_calls) == 2
    for _, headers in model_calls:
        lowered = {k.lower(): v for k, v in headers.items()}
        assert lowered["authorization"] == f"Bearer {sent}"
        assert "x-api-key" not in lowered
    # The real browser opened the page, with the secrets in its URL.
    assert [v.path for v in visits if v.path.startswith("/catalogue")] == [
        "/catalogue?seen=" + "+".join(secrets)
    ]

    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "3")
    (goto,) = row.trace
    assert goto.name == "mcp__browser__goto"
    assert goto.args["url"].endswith("/catalogue?seen=" + "+".join(["[REDACTED]"] * len(secrets)))
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    backend = manifest.settings["backend"]
    assert (backend["auth"], backend["login"]) == ("subscription", login)
    # upstream's defaults, typed nowhere: sonnet (an alias), no turn cap, 600 s
    assert (manifest.model, backend["model_is_alias"]) == ("sonnet", True)
    assert manifest.timeout_s == 600
    assert backend["budgets"]["max_turns"] is None
    assert manifest.settings["flags"]["max_turns"] is None
    # the model the alias ran as: the one the requests named, in the row and the manifest
    resolved = {rec.model for rec, _ in model_calls}
    assert len(resolved) == 1 and "sonnet" in next(iter(resolved)) != "sonnet"
    assert backend["resolved_models"] == sorted(resolved)
    assert row.details["model_id"] in resolved
    # a scripted model: never priced
    assert row.usage.cost_usd is None and row.details["cost_source"] is None

    # The login is in no file but the user's own: not the run folder, not the test's
    # folders; the attempt's temp folder (Claude Code's HOME with the copied login) is gone.
    for secret in secrets:
        assert not _files_holding(tmp_path, secret, but=stand_in), secret
    temp = Path(tempfile.gettempdir())
    assert not list(temp.glob(f"{PREFIX}{run_key(run_dir)}-*"))
    assert not left_running(run_dir)
