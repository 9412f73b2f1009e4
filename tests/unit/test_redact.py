"""No secret reaches anything the harness writes."""

from __future__ import annotations

import uuid

import pytest

from agent_benchmarks.redact import (
    REDACTED,
    add_secret,
    redact_argv,
    redact_env,
    redact_text,
    secrets_in_json,
)


def test_secret_flags_in_argv() -> None:
    argv = [
        "gaia-run",
        "--api-key",
        "sk-ant-api03-abcdefghijklmnop",
        "--judge-api-key=plainvalue123",
        "--token",
        "xyz",
        "--model",
        "claude-sonnet-4-6",
    ]
    out = redact_argv(argv, environ={})
    assert out == [
        "gaia-run",
        "--api-key",
        REDACTED,
        f"--judge-api-key={REDACTED}",
        "--token",
        REDACTED,
        "--model",
        "claude-sonnet-4-6",
    ]


def test_key_shapes_and_headers_in_text() -> None:
    text = (
        "curl -H 'Authorization: Bearer abcdefghijklmnop1234' -H 'x-api-key: sk-live-123456789' "
        "key sk-proj-ABCDEFGHIJ0123 hf token hf_abcdefghijklmnopqrstu "
        "google AIzaSyA1234567890abcdefghijk"
    )
    out = redact_text(text, environ={})
    for secret in (
        "abcdefghijklmnop1234",
        "sk-live-123456789",
        "sk-proj-ABCDEFGHIJ0123",
        "hf_abcdefghijklmnopqrstu",
        "AIzaSyA1234567890abcdefghijk",
    ):
        assert secret not in out
    assert "Bearer [REDACTED]" in out


def test_name_value_pairs_with_secret_names() -> None:
    out = redact_argv(
        ["env", "OPENAI_API_KEY=abc123", "GITHUB_TOKEN=ghp_xyz", "MY_SECRET=s3", "MODE=live"],
        environ={},
    )
    assert out == [
        "env",
        f"OPENAI_API_KEY={REDACTED}",
        f"GITHUB_TOKEN={REDACTED}",
        f"MY_SECRET={REDACTED}",
        "MODE=live",
    ]


def test_values_of_secret_environment_variables_are_masked_anywhere() -> None:
    env = {"ANTHROPIC_API_KEY": "opaque-value-without-prefix", "HOME": "/root"}
    assert redact_text("sent opaque-value-without-prefix to server", env) == (
        f"sent {REDACTED} to server"
    )
    assert redact_argv(["--header", "x=opaque-value-without-prefix"], env) == [
        "--header",
        f"x={REDACTED}",
    ]
    assert redact_env(env) == {"ANTHROPIC_API_KEY": REDACTED, "HOME": "/root"}


def test_a_secret_read_from_a_file_is_masked_from_then_on() -> None:
    secret, short = f"opaque-{uuid.uuid4().hex}", "ab12"
    text = f"stderr: {secret} ({short})"
    assert redact_text(text, environ={}) == text
    add_secret(secret)
    add_secret(short)  # too short to hunt for in free text, as for environment values
    assert redact_text(text, environ={}) == f"stderr: {REDACTED} ({short})"
    assert redact_argv(["--header", f"x={secret}"], environ={}) == ["--header", f"x={REDACTED}"]


def test_secrets_in_json_are_the_values_of_secret_named_keys_at_any_depth() -> None:
    credentials = {
        "claudeAiOauth": {
            "accessToken": "access-value",
            "refreshToken": "refresh-value",
            "expiresAt": 4102444800000,
            "scopes": ["user:inference"],
            "subscriptionType": "max",
        },
        "mcpOAuth": [{"server": "x", "client_secret": "client-value"}],
    }
    assert secrets_in_json(credentials) == ["access-value", "refresh-value", "client-value"]


def test_the_process_environment_is_read_again_after_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its secrets are kept between calls (reading them decoded every variable each time):
    # a variable set, changed or removed since must still count at the next call.
    first, second = f"opaque-{uuid.uuid4().hex}", f"opaque-{uuid.uuid4().hex}"
    assert redact_text(f"a {first} b") == f"a {first} b"
    monkeypatch.setenv("AB_TEST_SERVICE_TOKEN", first)
    assert redact_text(f"a {first} b") == f"a {REDACTED} b"
    assert redact_text(f"a {first} b") == f"a {REDACTED} b"  # kept, still right
    monkeypatch.setenv("AB_TEST_SERVICE_TOKEN", second)
    assert redact_text(f"a {first} {second} b") == f"a {first} {REDACTED} b"
    monkeypatch.delenv("AB_TEST_SERVICE_TOKEN")
    assert redact_text(f"a {second} b") == f"a {second} b"
