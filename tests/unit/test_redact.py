"""No secret reaches anything the harness writes."""

from __future__ import annotations

import re
import uuid

import pytest

from agent_benchmarks.common.redact import (
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


def test_an_attempt_folder_is_scrubbed_in_place_without_leaving_it(tmp_path) -> None:
    """What an agent left in its attempt folder is redacted file by file: nested files,
    bytes kept as they were (CRLF) around the replaced secret; a link out of the folder is
    not followed, and binary files are left alone."""
    from agent_benchmarks.runner.engine import scrub_secrets

    key = "sk-ant-api03-" + uuid.uuid4().hex
    folder = tmp_path / "attempt"
    (folder / "logs").mkdir(parents=True)
    (folder / "logs" / "trace.jsonl").write_bytes(f'{{"h": "Bearer {key}"}}\r\nnext\r\n'.encode())
    outside = tmp_path / "outside.txt"
    outside.write_text(f"key {key}\n")
    (folder / "link.txt").symlink_to(outside)
    binary = b"\xff\xfe" + key.encode()
    (folder / "shot.png").write_bytes(binary)
    (folder / "empty").write_bytes(b"")

    scrub_secrets(folder)

    scrubbed = (folder / "logs" / "trace.jsonl").read_bytes()
    assert key.encode() not in scrubbed and REDACTED.encode() in scrubbed
    assert scrubbed.endswith(b"\r\nnext\r\n")
    assert outside.read_text() == f"key {key}\n"  # the link's target is not the agent's
    assert (folder / "shot.png").read_bytes() == binary


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        "https://example.com/search?q=shoes&page=2",
        "$usage input=120 cached=0 output=7",
        "MY_SERVICE_TOKEN=abcdefgh12345678 and more",
        "my_service_token=abcdefgh12345678",
        "Authorization: BEARER abcdefghijklmnop",
        "x-api-key: zzz123456789",
        "sk-abcdefghijklmno hf_abcdefghijk AIzaSyA1234567890abcdefghij",
        "API_\u212aEY=abcdefgh12345678",  # KELVIN SIGN folds to k under IGNORECASE
        "\u0130 token=abcdefgh12345678",
    ],
)
def test_the_quick_test_for_pattern_words_changes_no_result(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts holding no word a pattern needs skip the patterns: the result is what running
    every pattern gives."""
    quick = redact_text(text, environ={})
    import agent_benchmarks.common.redact as redact_module

    monkeypatch.setattr(redact_module, "_ANY_REQUIRED", re.compile(""))  # always "may match"
    assert quick == redact_text(text, environ={})
