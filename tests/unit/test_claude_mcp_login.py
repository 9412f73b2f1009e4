"""A subscriber's Claude login reaches the attempt, and only the login (issue 15)."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    ClaudeMcpBackend,
    McpSettings,
    subscription_login,
)
from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import REDACTED, redact_text
from agent_benchmarks.records.schema import TaskInput

# A stand-in login, shaped as Claude Code writes ~/.claude/.credentials.json.
ACCESS = "sk-ant-oat01-unit-stand-in-access-4c1d"
REFRESH = "sk-ant-ort01-unit-stand-in-refresh-9e2a"
CREDENTIALS = json.dumps(
    {
        "claudeAiOauth": {
            "accessToken": ACCESS,
            "refreshToken": REFRESH,
            "expiresAt": 4102444800000,
            "scopes": ["user:inference"],
            "subscriptionType": "max",
        }
    }
)


def _backend(login: str | None) -> ClaudeMcpBackend:
    settings = McpSettings(
        backend="lightpanda",
        claude="claude",
        model="sonnet",
        max_turns=7,
        auth="subscription",
        mcp_tool_timeout_ms=1000,
        lightpanda="lightpanda",
        login=login,
    )
    return ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})


def _prepared(tmp_path: Path) -> PreparedTask:
    return PreparedTask(
        task=TaskInput(suite="localweb", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path / "run" / "attempt",
        tmpdir=tmp_path / "t",
    )


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}")
    (home / ".claude" / "CLAUDE.md").write_text("private")
    (home / ".claude.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN", raising=False)
    return home


def test_no_login_is_one_clear_error(user_home: Path) -> None:
    with pytest.raises(InputError, match="no Claude login found"):
        subscription_login()


def test_the_token_is_passed_through_and_nothing_else_of_claude(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-stand-in")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/elsewhere")
    assert subscription_login() == "oauth-token"
    env = _backend("oauth-token").command(_prepared(tmp_path)).env
    assert env["CLAUDE_CODE_OAUTH_TOKEN"] == "sk-ant-oat01-stand-in"
    assert "CLAUDE_CONFIG_DIR" not in env


def test_the_credentials_file_alone_is_copied_outside_the_run_folder(
    user_home: Path, tmp_path: Path
) -> None:
    (user_home / ".claude" / ".credentials.json").write_text(CREDENTIALS)
    assert subscription_login() == "credentials-file"
    prepared = _prepared(tmp_path)
    env = _backend("credentials-file").command(prepared).env
    home = Path(env["HOME"])
    assert home.parent == prepared.tmpdir
    copied = home / ".claude" / ".credentials.json"
    assert copied.read_text() == CREDENTIALS
    assert stat.S_IMODE(copied.stat().st_mode) == 0o600
    assert sorted(p.name for p in home.rglob("*")) == [".claude", ".credentials.json"]
    assert not any((tmp_path / "run").rglob(".credentials.json"))


def test_the_files_tokens_are_masked_in_everything_the_harness_writes(user_home: Path) -> None:
    """No environment variable names them, so the harness learns them when it reads the
    file: from then on they are masked wherever text is redacted (rows, stderr tails),
    whatever their shape (these match none of the key patterns)."""
    access, refresh = f"oat-access-{uuid.uuid4().hex}", f"ort-refresh-{uuid.uuid4().hex}"
    login = {"claudeAiOauth": {"accessToken": access, "refreshToken": refresh}}
    (user_home / ".claude" / ".credentials.json").write_text(json.dumps(login))
    tail = f"refresh failed: {access} / {refresh}"
    assert redact_text(tail, environ={}) == tail  # unknown to the harness before
    subscription_login()
    assert redact_text(tail, environ={}) == f"refresh failed: {REDACTED} / {REDACTED}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [("not json at all", "not JSON"), ('{"claudeAiOauth": {"scopes": []}}', "no token in it")],
)
def test_a_credentials_file_without_a_login_is_one_error_naming_it(
    user_home: Path, content: str, problem: str
) -> None:
    path = user_home / ".claude" / ".credentials.json"
    path.write_text(content)
    with pytest.raises(InputError, match=problem) as caught:
        subscription_login()
    assert str(path) in str(caught.value)
