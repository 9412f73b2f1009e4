"""agent-browser as shipped: its own chat loop (``agent-browser chat``), one task per process.

``agent-browser chat -v [--model provider/model] <message>`` runs agent-browser's own LLM
loop through the Vercel AI Gateway (``AI_GATEWAY_URL``, ``AI_GATEWAY_API_KEY``), or with
``GEMINI_DIRECT=1`` through Google's OpenAI-compatible endpoint (``GOOGLE_API_KEY``), with its
own system prompt (its bundled skills) and one tool, ``agent_browser``, whose ``command``
is an agent-browser command line run in the chat's session. What it does, as observed with
agent-browser 0.41.2 against a capture server and the scripted gateway
(``tests/fixtures/agent_browser_chat/``):

* ``POST {AI_GATEWAY_URL}/v1/chat/completions`` with ``Authorization: Bearer <key>``,
  ``{"model", "messages", "tools", "stream": true}`` and no ``stream_options``: OpenAI chat
  completions, streamed. Text deltas go to stdout as they arrive, the narration of every
  turn run together ("Let me open it.Now reading.42"); tool calls run one after another.
* Limits are hard-coded, with no flag or variable to change them (:data:`LIMITS`): 50 model
  requests per chat (then it stops, exit 0, no message), a 5-minute session budget checked
  before each request ("Chat session timed out (5 minute limit).", exit 1), and 60 s per
  tool call ("Tool execution timed out after 60 seconds." as the tool's result). A gateway
  that never answers is not bounded by any of them.
* No retry: an HTTP error prints ``✗ <body>`` on stderr and exits 1; an unreachable gateway
  prints ``✗ Gateway request failed: ...``, exit 1; a stream that is not JSON is skipped
  silently (exit 0, no output).
* ``-v`` prints each command on stderr as ``> agent-browser open URL`` and its output
  indented by two spaces; ``--session`` and other global flags are refused inside the chat
  ("Blocked: this chat is bound to session ..."), so the chat stays in our session.
* It has no blocked-URL setting. ``network route <pattern> --abort`` blocks any request the
  browser makes (Chromium and Lightpanda alike), and an action policy denying ``unroute``
  keeps the model from lifting it. ``read <url>`` fetches over HTTP outside the browser, so
  routes do not apply to it: a blocking run's policy denies ``read`` too.

Each attempt runs :mod:`.agent_browser_chat_attempt` as its process, which meters the
gateway (usage, and which reply was the last), runs the chat, closes the session and reaps
its browser. Usage is what the gateway reports; a reply without it is estimated from
characters / 4 and the row's usage says ``estimated``.

The prompt: chat takes no system prompt, so the suite's prompt opens the user message. It
asks for the answer alone, without the ``<ANSWER>`` envelope the other runners use: the
meter knows which reply was the loop's last (the one that called no tool), so earlier
narration never reaches the prediction, and a bare answer is what this loop, whose own
system prompt says "Keep responses concise", gives most reliably.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from agent_benchmarks.backends.attachments import message_attachments
from agent_benchmarks.backends.base import (
    AgentOutcome,
    BackendDef,
    BuildRequest,
    PreparedTask,
    process_failure,
)
from agent_benchmarks.backends.lightpanda import bundled_binary, check_binary, check_user_agent
from agent_benchmarks.backends.lightpanda_trace import strip_ansi
from agent_benchmarks.backends.programs import (
    agent_browser_programs,
    node_binary,
    program_version,
    short_id,
)
from agent_benchmarks.backends.web_routing import (
    AGENT_BROWSER_LIGHTPANDA_WEB_ROUTING,
    AGENT_BROWSER_WEB_ROUTING,
    agent_browser_web_env,
)
from agent_benchmarks.common.environ import current as current_environment
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.common.redact import redact_text
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
from agent_benchmarks.isolation.resources import AGENT, CHROMIUM_RULES, ENGINE, RoleRule
from agent_benchmarks.records.schema import ToolCall, Usage
from agent_benchmarks.search import SEARCH_SETTINGS
from agent_benchmarks.spec.prompts import RESEARCH_ANSWER_ONLY, SuitePrompt
from agent_benchmarks.spec.provenance import utc_stamp
from agent_benchmarks.spec.run_spec import Options, RunSpec, option
from agent_benchmarks.spec.suites import SuiteDef

# The roles of an attempt's processes: Chromium or Lightpanda (serving CDP) is the engine;
# agent-browser (the chat loop, the commands it runs and their daemon) is the agent; the
# attempt's driver, which meters the gateway and closes the session, is the harness's.
CHAT_ROLES = (
    *CHROMIUM_RULES,
    RoleRule(ENGINE, exe=r"^lightpanda$"),
    RoleRule("harness", args=r"-m agent_benchmarks\.backends\.agent_browser_chat_attempt"),
    RoleRule(
        AGENT,
        exe=r"^agent-browser",
        note="agent-browser chat: its loop, the commands it runs and their browser daemon",
    ),
    RoleRule(AGENT, args=r"^\S*node\S*\s+\S*/agent-browser(\s|$)"),  # npm's node shim
)

NAME = "agent-browser-chat"
ENGINES = ("chrome", "lightpanda")
DEFAULT_MODEL = "anthropic/claude-sonnet-4.6"  # agent-browser's own default
DEFAULT_GATEWAY_URL = "https://ai-gateway.vercel.sh"
DEFAULT_TIMEOUT_S = 300.0  # upstream's (agent-browser's chat stops itself at 5 minutes)
DEFAULT_SESSION_PREFIX = "abc"
# GEMINI_DIRECT=1 (upstream's switch): Google's OpenAI-compatible endpoint, GOOGLE_API_KEY.
GEMINI_OPENAI_URL = "https://generativelanguage.googleapis.com/v1beta/openai"
# For tests only: another endpoint standing in for Google's under GEMINI_DIRECT=1.
GEMINI_URL_OVERRIDE = "GEMINI_OPENAI_BASE_URL"

# agent-browser 0.41.2's chat limits: constants in its source, observed on the binary.
LIMITS = {
    "max_model_requests": 50,
    "session_time_limit_s": 300,
    "tool_call_timeout_s": 60,
    "source": "hard-coded in agent-browser's chat loop; no flag or variable changes them",
}
STEP_CAP = "max_model_requests"
SESSION_LIMIT = "session_time_limit"
TOOL_TIMEOUT = "tool_call_timeout"
_SESSION_LIMIT_MESSAGE = "Chat session timed out (5 minute limit)."
_TOOL_TIMEOUT_MESSAGE = "Tool execution timed out after 60 seconds."

# What a blocking run's action policy denies, and why.
BLOCKING_POLICY = {"deny": ["unroute", "read"]}
BLOCKING = {
    "mechanism": "`agent-browser network route <pattern> --abort` per pattern, in the "
    "session before the chat starts (every request the browser makes, either engine)",
    "action_policy": BLOCKING_POLICY,
    "why_policy": "unroute would let the model lift the blocks; read <url> fetches over HTTP "
    "outside the browser, where routes do not apply",
}

# The user's agent-browser settings must not change what is measured: these are removed
# from the environment (HOME is private too, so no ~/.agent-browser/config.json applies).
_SCRUBBED_PREFIXES = ("AGENT_BROWSER_", "AI_GATEWAY_")
_MAX_OUTPUT_CHARS = 8000
_STDOUT_KEPT_CHARS = 4000
_MAX_ANSWER_KEPT_CHARS = 20_000
# --answer: which of the loop's texts is the prediction (see ChatConfig.answer).
ANSWER_JOINED = "joined"
ANSWER_LAST_REPLY = "last-reply"
_CHARS_PER_TOKEN = 4  # the estimate for replies that carry no usage
# The chat's message is one argv string: Linux refuses more than 128 KiB (MAX_ARG_STRLEN),
# and the whole chat with it (E2BIG). A margin below that for the string's terminator.
_MESSAGE_MAX_BYTES = 120 * 1024


# --- reading what an attempt left -------------------------------------------------------------


@dataclass
class MeterSummary:
    """The gateway traffic of one attempt, from ``meter.jsonl``."""

    requests: int = 0
    replies: list[dict[str, Any]] = field(default_factory=list)
    unanswered: list[int] = field(default_factory=list)  # request numbers never answered
    usage: Usage = field(default_factory=Usage)
    problems: list[str] = field(default_factory=list)

    @property
    def answered(self) -> list[dict[str, Any]]:
        """Replies agent-browser could read (HTTP 2xx)."""
        return [r for r in self.replies if 200 <= (r.get("status") or 0) < 300]

    @property
    def last(self) -> dict[str, Any] | None:
        return self.replies[-1] if self.replies else None

    @property
    def final_text(self) -> str | None:
        """The loop's final reply: the text of its last reply if that called no tool."""
        last = self.last
        if last is None or not 200 <= (last.get("status") or 0) < 300 or last.get("tool_calls"):
            return None
        return last.get("text") or ""

    @property
    def joined_text(self) -> str:
        """Every answered reply's text run together, in order: what ``chat --json`` prints as
        its ``text`` (the text deltas of all turns), which upstream took as the prediction."""
        return "".join(r.get("text") or "" for r in self.answered)

    def gateway_error(self) -> str | None:
        """Why the gateway failed the chat, if it did: the last reply an error, or cut."""
        last = self.last
        if last is None:
            return None
        status = last.get("status") or 0
        if status >= 400 or last.get("error"):
            return f"gateway reply {last['n']}: HTTP {status}: {last.get('error', '')}"[:500]
        if last.get("malformed_lines") or (last.get("stream") and not last.get("done")):
            end = "seen" if last.get("done") else "missing"
            return (
                f"gateway reply {last['n']} was malformed: {last.get('malformed_lines', 0)} "
                f"stream line(s) not JSON, end of stream {end}"
            )
        return None


def read_meter(path: Path) -> MeterSummary:
    """Summarise ``meter.jsonl``: replies in order, requests never answered, and usage
    (the gateway's where it reported it, else estimated from characters)."""
    summary = MeterSummary()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return summary
    asked: list[int] = []
    for number, line in enumerate(lines, start=1):
        try:
            entry = json.loads(line)
        except ValueError:
            summary.problems.append(f"meter line {number}: not JSON")
            continue
        if entry.get("event") == "request":
            asked.append(entry["n"])
        elif entry.get("event") == "reply":
            summary.replies.append(entry)
    summary.requests = len(asked)
    replied = {r["n"] for r in summary.replies}
    summary.unanswered = [n for n in asked if n not in replied]
    summary.usage = _usage(summary.answered)
    return summary


def _usage(replies: list[dict[str, Any]]) -> Usage:
    totals = {"input_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
    output = 0
    estimated = False
    for reply in replies:
        counted = _reported_usage(reply.get("usage"))
        if counted is None:
            estimated = True
            out_chars = len(reply.get("text") or "") + sum(
                len(c.get("arguments") or "") for c in reply.get("tool_calls") or []
            )
            counted = {
                "input_tokens": math.ceil((reply.get("prompt_chars") or 0) / _CHARS_PER_TOKEN),
                "output_tokens": math.ceil(out_chars / _CHARS_PER_TOKEN),
            }
        for key in totals:
            totals[key] += counted.get(key, 0)
        output += counted.get("output_tokens", 0)
    return Usage(**totals, output_tokens=output, turns=len(replies), estimated=estimated)


def _reported_usage(usage: Any) -> dict[str, int] | None:
    """A reply's usage in :class:`Usage`'s convention (input excludes cache traffic), from
    the OpenAI shape the gateway speaks (``prompt_tokens`` includes the cached part) or the
    Anthropic shape some gateways pass through."""
    if not isinstance(usage, dict):
        return None

    def count(*path: str) -> int:
        value: Any = usage
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if "prompt_tokens" in usage:
        cached = count("prompt_tokens_details", "cached_tokens")
        return {
            "input_tokens": max(count("prompt_tokens") - cached, 0),
            "cache_read_tokens": cached,
            "output_tokens": count("completion_tokens"),
        }
    if "input_tokens" in usage:
        return {
            "input_tokens": count("input_tokens"),
            "cache_read_tokens": count("cache_read_input_tokens"),
            "cache_write_tokens": count("cache_creation_input_tokens"),
            "output_tokens": count("output_tokens"),
        }
    return None


@dataclass
class VerboseRun:
    """What ``chat -v`` printed on stderr: the commands it ran, and its own messages."""

    calls: list[ToolCall] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # lines of its own, e.g. errors


def stderr_lines(workdir: Path, stderr: str) -> list[tuple[float | None, str]]:
    """The chat's stderr lines with the time each arrived (seconds since the chat started),
    from the attempt's ``stderr.jsonl``; without it, the process's stderr without times."""
    # The attempt driver's module, imported where its file names are read: it brings psutil
    # and the reaping code, which the run process itself never needs.
    from agent_benchmarks.backends.agent_browser_chat_attempt import STDERR_LOG

    try:
        text = (workdir / STDERR_LOG).read_text(encoding="utf-8")
    except OSError:
        return [(None, line) for line in stderr.splitlines()]
    lines: list[tuple[float | None, str]] = []
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a torn last line: the attempt was killed while it wrote
        lines.append((entry.get("t"), entry.get("line", "")))
    return lines


def parse_verbose(
    lines: list[tuple[float | None, str]], max_output_chars: int = _MAX_OUTPUT_CHARS
) -> VerboseRun:
    """The tool calls in ``chat -v`` stderr.

    A command is ``> <command>`` (a command holding newlines goes on over the following
    unindented lines), its output follows indented by two spaces (printed once the command
    has finished, so the first output line's time minus the command's is its latency), and
    the chat's own messages (gateway errors, the session limit) stand unindented after a
    blank line.
    """
    run = VerboseRun()
    command: list[str] | None = None
    output: list[str] = []
    started: float | None = None
    finished: float | None = None
    in_command = False

    def flush() -> None:
        if command is not None:
            latency = None
            if started is not None and finished is not None:
                latency = round((finished - started) * 1000, 1)
            run.calls.append(_tool_call("\n".join(command), output, latency, max_output_chars))

    for when, raw in lines:
        line = strip_ansi(raw)
        if line.startswith("> "):
            flush()
            command, output, started, finished = [line[2:]], [], when, None
            in_command = True
        elif line.startswith("  ") and command is not None:
            in_command = False
            if finished is None:
                finished = when
            output.append(line[2:])
        elif not line.strip():
            in_command = False
            if command is not None and line == " " * len(line) and len(line) >= 2:
                output.append("")  # a blank line of the output, still indented
        elif in_command and command is not None:
            command.append(line)
        else:
            run.messages.append(line.strip())
    flush()
    return run


def _tool_call(
    command: str, output_lines: list[str], latency_ms: float | None, max_output_chars: int
) -> ToolCall:
    words = command.split()
    words = words[1:] if words and words[0] == "agent-browser" else words
    name = words[0] if words else ""
    output = "\n".join(output_lines).strip("\n")
    first = output.splitlines()[0].strip() if output else ""
    error = None
    if first.startswith(("✗", "Blocked:")) or first == _TOOL_TIMEOUT_MESSAGE:
        error = first[:500]
    page_url = None
    if name in ("open", "goto", "navigate") and error is None:
        shown = [part.strip() for part in output.splitlines()[1:2]]
        page_url = shown[0] if shown and "://" in shown[0] else None
    truncated = output
    if len(output) > max_output_chars:
        truncated = (
            output[:max_output_chars] + f"\n[... truncated {len(output) - max_output_chars} chars]"
        )
    return ToolCall(
        name=name,
        args={"command": command},
        latency_ms=latency_ms,
        page_url=page_url,
        error=error,
        result_bytes=len(output.encode()),
        output=truncated,
        output_chars=len(output),
    )


def classify(
    result: ProcessResult, meter: MeterSummary, verbose: VerboseRun, cleanup: dict[str, Any]
) -> tuple[Any, str | None, str | None, list[str]]:
    """(status, error_class, error, limits hit) of a finished attempt."""
    limits = [TOOL_TIMEOUT] if any(c.error == _TOOL_TIMEOUT_MESSAGE for c in verbose.calls) else []
    failed = process_failure(result, "agent-browser chat")
    if failed is not None:
        return (*failed, limits)
    if "routes_failed" in cleanup:
        failure = cleanup["routes_failed"]
        message = f"blocking {failure['pattern']!r} failed: {failure['error']}"
        return "error", "agent_error", message, limits
    if any(_SESSION_LIMIT_MESSAGE in m for m in verbose.messages):
        # agent-browser's own budget, as shipped: no answer, not an infrastructure fault.
        return "budget", None, None, [*limits, SESSION_LIMIT]
    gateway = meter.gateway_error()
    said = "; ".join(m.lstrip("✗ ").strip() for m in verbose.messages if m)[:500]
    if gateway is not None or "Gateway request failed" in said:
        return "error", "model_api", gateway or said, limits
    if result.returncode != 0:
        return "error", "agent_error", f"exit {result.returncode}: {said}".strip(": "), limits
    last = meter.last
    if last is not None and last.get("tool_calls") and meter.requests >= LIMITS[STEP_CAP]:
        # Every one of its 50 requests called a tool: it stopped without an answer.
        return "budget", None, None, [*limits, STEP_CAP]
    return ("ok" if (meter.final_text or "").strip() else "empty"), None, None, limits


# --- the backend ------------------------------------------------------------------------------


class ChatConfig(BaseModel):
    """What defines an agent-browser chat run; stored in the manifest for --resume."""

    model_config = ConfigDict(extra="forbid")

    agent_browser: str
    engine: str
    model: str
    provider: str | None
    # How the model was chosen: "--model" (passed to chat as --model), "AI_GATEWAY_MODEL"
    # (passed on in the environment, as upstream) or agent-browser's own default (nothing
    # passed).
    model_source: str = "--model"
    # AI_GATEWAY_URL; may hold "{task_id}", replaced per attempt (a routing proxy). With
    # GEMINI_DIRECT=1, Google's OpenAI-compatible endpoint (never the key).
    gateway_url: str
    # "gateway": requests go to gateway_url + the path agent-browser asks for
    # (/v1/chat/completions); "openai-base" (GEMINI_DIRECT): gateway_url is an OpenAI base
    # URL already holding its version, so /v1/chat/completions goes to {base}/chat/completions.
    endpoint_kind: str = "gateway"
    key_env: str = "AI_GATEWAY_API_KEY"  # where the key is read from (its value never stored)
    # Each attempt's agent-browser session is <prefix>-<pid>-<attempt>: fresh per attempt.
    session_prefix: str = DEFAULT_SESSION_PREFIX
    # --user-agent: AGENT_BROWSER_USER_AGENT, which both engines send (seen on the wire).
    user_agent: str | None = None
    lightpanda: str | None = None
    action_timeout_ms: int | None = None  # AGENT_BROWSER_DEFAULT_TIMEOUT; None: its 25000
    # Which text is the prediction: "joined" (every turn's narration run together, as
    # chat --json's text, upstream's) or "last-reply" (the loop's last reply, if it called no
    # tool). The row keeps both in details.chat_answers.
    answer: str = "joined"
    limits: dict[str, Any] = LIMITS
    blocking: dict[str, Any] | None = None
    usage: str = (
        "as the gateway reports it (the meter adds stream_options.include_usage); replies "
        "without usage are estimated from characters / 4 and the row says estimated"
    )


class AgentBrowserChatBackend:
    model_protocol = "gateway"

    def __init__(self, config: ChatConfig, programs: dict[str, str]):
        self.config = config
        self._programs = programs
        self.name = f"{NAME}/{config.engine}"
        on_lightpanda = config.engine == "lightpanda"
        self.web_routing = (
            AGENT_BROWSER_LIGHTPANDA_WEB_ROUTING if on_lightpanda else AGENT_BROWSER_WEB_ROUTING
        )
        self.web_nss_db = not on_lightpanda

    def programs(self) -> dict[str, str]:
        return dict(self._programs)

    def program_probe(self) -> Callable[[], dict[str, str]]:
        """What :meth:`programs` says, found again on another machine (a cluster node)."""
        c = self.config
        lightpanda = Path(c.lightpanda) if c.lightpanda else None
        return functools.partial(_programs, c.agent_browser, c.engine, lightpanda)

    def settings(self) -> dict[str, Any]:
        # The loop caps model requests; it has no token or cost cap: declared as such.
        budgets = {"max_turns": LIMITS[STEP_CAP], "max_tokens": None, "max_cost_usd": None}
        return self.config.model_dump() | {"budgets": budgets}

    def meter_problem(self) -> str | None:
        return None  # the attempt's own meter forwards to any upstream

    def model_endpoint(self, prepared: PreparedTask) -> str:
        """Where the attempt's gateway meter forwards agent-browser's requests."""
        return prepared.base_url or self.config.gateway_url.replace(
            "{task_id}", quote(prepared.task.id, safe="")
        )

    def session_name(self, workdir: Path) -> str:
        # Letters, digits and hyphens only (agent-browser's rule); unique per attempt.
        return f"{self.config.session_prefix}-{os.getpid()}-{short_id(workdir)}"

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        c = self.config
        # Absolute: the attempt runs inside its folder, so a relative path would not resolve.
        workdir = prepared.workdir.absolute()
        home = workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {
            k: v for k, v in current_environment().items() if not k.startswith(_SCRUBBED_PREFIXES)
        }
        if c.key_env in os.environ:
            env["AI_GATEWAY_API_KEY"] = os.environ[c.key_env]
        if c.model_source == "AI_GATEWAY_MODEL":
            env["AI_GATEWAY_MODEL"] = c.model  # as resolved (google/ stripped for Gemini)
        # The socket path must stay under 103 bytes, and the run folder may be deep: the
        # attempt's temp folder is short, and removed when the attempt ends.
        socket_dir = prepared.tmpdir / "sockets"
        env |= {
            "HOME": str(home),
            "AGENT_BROWSER_NO_VERSION_CHECK": "1",
            "AGENT_BROWSER_SOCKET_DIR": str(socket_dir),
            "LIGHTPANDA_DISABLE_TELEMETRY": "true",
        }
        if c.engine == "lightpanda":
            assert c.lightpanda is not None
            env |= {
                "AGENT_BROWSER_ENGINE": "lightpanda",
                "AGENT_BROWSER_EXECUTABLE_PATH": c.lightpanda,
            }
        if c.action_timeout_ms is not None:
            env["AGENT_BROWSER_DEFAULT_TIMEOUT"] = str(c.action_timeout_ms)
        if c.user_agent is not None:
            env["AGENT_BROWSER_USER_AGENT"] = c.user_agent
        if prepared.web is not None:
            env |= agent_browser_web_env(prepared.web, prepared.tmpdir, c.lightpanda)
        if prepared.block_urls:
            policy = workdir / "action-policy.json"
            policy.write_text(json.dumps(BLOCKING_POLICY) + "\n", encoding="utf-8")
            env["AGENT_BROWSER_ACTION_POLICY"] = str(policy)
        env |= prepared.env
        upstream = self.model_endpoint(prepared)
        message, attachments = chat_message(prepared)
        if attachments:
            # The row says what reached the model of each attachment.
            prepared.details["attachments"] = attachments
        attempt = {
            "binary": c.agent_browser,
            "session": self.session_name(workdir),
            # chat gets --model only when the run was given one (as upstream).
            "model": c.model if c.model_source == "--model" else None,
            "message": message,
            "upstream": upstream,
            "endpoint_kind": c.endpoint_kind,
            "routes": list(prepared.block_urls),
            "workdir": str(workdir),
            "socket_dir": str(socket_dir),
        }
        config_path = workdir / "attempt.json"
        config_path.write_text(json.dumps(attempt, indent=2) + "\n", encoding="utf-8")
        argv = [sys.executable, "-m", "agent_benchmarks.backends.agent_browser_chat_attempt"]
        return ProcessSpec(
            argv=[*argv, str(config_path)], env=env, cwd=workdir, timeout_s=None, roles=CHAT_ROLES
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        from agent_benchmarks.backends.agent_browser_chat_attempt import CLEANUP_LOG, METER_LOG

        workdir = prepared.workdir.absolute()
        meter = read_meter(workdir / METER_LOG)
        verbose = parse_verbose(stderr_lines(workdir, result.stderr))
        cleanup = _read_json(workdir / CLEANUP_LOG)
        status, error_class, error, limits = classify(result, meter, verbose, cleanup)
        details: dict[str, Any] = {
            "engine": self.config.engine,
            "session": self.session_name(workdir),
            "limits_hit": limits,
            "gateway": {
                "requests": meter.requests,
                # Some gateways echo the key in an error: the engine redacts rows' own
                # fields, not a backend's details, so these are redacted here.
                "errors": [
                    {"n": r["n"], "status": r.get("status"), "error": redact_text(r["error"])}
                    for r in meter.replies
                    if r.get("error")
                ],
                "unanswered": meter.unanswered,
                "usage_reported": sum(1 for r in meter.answered if r.get("usage")),
            },
            "chat_stdout": redact_text(result.stdout[-_STDOUT_KEPT_CHARS:]),
            "chat_messages": [redact_text(m) for m in verbose.messages],
            "cleanup": cleanup,
        }
        joined, last = meter.joined_text.strip(), (meter.final_text or "").strip()
        details["chat_answers"] = {
            "prediction": self.config.answer,
            "joined": redact_text(joined[:_MAX_ANSWER_KEPT_CHARS]),
            "last_reply": redact_text(last[:_MAX_ANSWER_KEPT_CHARS]),
        }
        output = joined if self.config.answer == ANSWER_JOINED else last
        if status in ("empty", "budget") and error is None and output:
            status = "ok"  # e.g. the step cap: no last reply, but the turns said something
        if meter.problems:
            details["meter_problems"] = meter.problems
        return AgentOutcome(
            status=status,
            output=output,
            error_class=error_class,
            error=error,
            trace=verbose.calls,
            usage=meter.usage,
            details=details,
        )


def chat_message(prepared: PreparedTask) -> tuple[str, list[dict[str, Any]]]:
    """The one message the chat gets, and the row's attachment records saying what of each
    attachment reached it.

    chat takes no system prompt (its own is fixed), so the suite's opens the message, and
    no files, so GAIA's attachment follows the task as the MCP runner gives it: its text
    (office files extracted), or a line naming a file that has none. The message is one
    argv string, which Linux caps at 128 KiB: an attachment's text is cut to keep the
    message under :data:`_MESSAGE_MAX_BYTES`, and the message and the record say so."""
    parts = [prepared.system_prompt.strip()] if prepared.system_prompt else []
    parts.append(prepared.text)
    head = "\n\n".join(parts)
    plans = prepared.details.get("attachments")
    if not plans:
        return head, []
    room = _MESSAGE_MAX_BYTES - len(head.encode("utf-8")) - len("\n\n")
    block, records = message_attachments(plans, max_bytes=room)
    return f"{head}\n\n{block}", records


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# --- the suites' side -----------------------------------------------------------------------


def chat_prompt(suite: SuiteDef) -> SuitePrompt:
    """The suite's prompt for this loop: the answer alone. Suites that ask the other
    runners for an ``<ANSWER>`` envelope get :data:`RESEARCH_ANSWER_ONLY`; the others
    (WebBench's grounded sentence, localweb's exact format) already ask for the answer only."""
    assert suite.prompt is not None
    if suite.prompt.answer == "envelope":
        return SuitePrompt(system=RESEARCH_ANSWER_ONLY, answer="raw")
    return suite.prompt


# --- the command line -------------------------------------------------------------------------


class ChatOptions(Options):
    """agent-browser chat's own flags."""

    engine: str | None = option(
        help="the browser under agent-browser (default: chrome, i.e. Chromium)", choices=ENGINES
    )
    base_url: str | None = option(
        help="AI_GATEWAY_URL (default: $AI_GATEWAY_URL, else the Vercel AI Gateway); "
        "{task_id} in it is replaced per task",
        flag="--gateway-url",
        metavar="URL",
    )
    agent_browser: Path | None = option(
        help="agent-browser binary (default: node_modules/.bin)", metavar="PATH"
    )
    lightpanda: Path | None = option(help="lightpanda binary (default: PyPI's)", metavar="PATH")
    action_timeout_ms: int | None = option(
        help="agent-browser's timeout for each browser action (AGENT_BROWSER_DEFAULT_TIMEOUT; "
        "default: its own, 25000)",
        ge=1,
    )
    chat_answer: str | None = option(
        help="the prediction: joined (every turn's text run together, as chat --json's text; "
        "upstream's, the default) or last-reply (the loop's last reply)",
        flag="--answer",
        choices=(ANSWER_JOINED, ANSWER_LAST_REPLY),
    )
    search: str | None = option(
        help="the agent's web search: native only (the default: search engines' pages in "
        "the browser); tavily and none are refused (docs/search.md)",
        choices=SEARCH_SETTINGS,
    )
    session: str | None = option(
        help="prefix of agent-browser's session names (default: abc); each attempt still "
        "gets a fresh session NAME-<pid>-<attempt>, unlike upstream's one per worker",
        metavar="NAME",
        defines_run=False,
    )


def gemini_direct() -> bool:
    """GEMINI_DIRECT, read as upstream reads it: set and not 0/false."""
    return os.environ.get("GEMINI_DIRECT", "").strip() not in ("", "0", "false", "False")


def _chosen_model(spec: RunSpec) -> tuple[str, str, str]:
    """(model as typed, where it came from, the flag to name in errors): --model, else
    AI_GATEWAY_MODEL (as upstream), else agent-browser's own default."""
    if spec.model is not None:
        return spec.model, "--model", f"--model {spec.model}"
    env_model = os.environ.get("AI_GATEWAY_MODEL", "").strip()
    if env_model:
        return env_model, "AI_GATEWAY_MODEL", f"AI_GATEWAY_MODEL={env_model}"
    return DEFAULT_MODEL, "agent-browser default", f"agent-browser's default model {DEFAULT_MODEL}"


def _model(spec: RunSpec, model: str, named: str) -> tuple[str, str]:
    """(provider, provider/model) from a provider/model id, or --provider with a bare one."""
    provider, slash, name = model.partition("/")
    if not slash:
        if spec.provider is None:
            raise InputError(
                f"{named}: agent-browser chat names models as provider/model "
                "(e.g. google/gemini-3.5-flash)"
            )
        provider, name = spec.provider, model
    if not provider or not name:
        raise InputError(f"{named}: expected provider/model, e.g. google/gemini-3.5-flash")
    if spec.provider is not None and spec.provider != provider:
        raise InputError(f"--provider {spec.provider} and {named} disagree")
    return provider, f"{provider}/{name}"


def _gemini_model(spec: RunSpec, model: str, named: str) -> str:
    """The model id Google's endpoint takes: a google/ prefix stripped, as upstream does."""
    if spec.provider not in (None, "google", "gemini"):
        raise InputError(f"--provider {spec.provider}: GEMINI_DIRECT=1 talks to Google only")
    provider, slash, name = model.partition("/")
    if not slash:
        return model
    if provider != "google" or not name:
        raise InputError(
            f"{named}: GEMINI_DIRECT=1 sends the model to Google's endpoint; give a Gemini "
            "model (gemini-... or google/gemini-...)"
        )
    return name


def _endpoint(options: ChatOptions) -> tuple[str, str, str]:
    """(URL, endpoint kind, the variable holding its key) of the model endpoint."""
    if gemini_direct():
        if options.base_url is not None:
            raise InputError(
                "--gateway-url: GEMINI_DIRECT=1 already points agent-browser chat at Google's "
                "endpoint; unset GEMINI_DIRECT to use a gateway"
            )
        if not os.environ.get("GOOGLE_API_KEY"):
            raise InputError("GEMINI_DIRECT=1 needs GOOGLE_API_KEY in the environment")
        url = os.environ.get(GEMINI_URL_OVERRIDE) or GEMINI_OPENAI_URL
        return url.rstrip("/"), "openai-base", "GOOGLE_API_KEY"
    if not os.environ.get("AI_GATEWAY_API_KEY"):
        raise InputError(
            "agent-browser chat needs AI_GATEWAY_API_KEY in the environment (a Vercel AI "
            "Gateway key, or any value for a gateway that takes none), or GEMINI_DIRECT=1 "
            "with GOOGLE_API_KEY; localweb-ab-run without --provider/--gateway-url needs no key"
        )
    url = options.base_url or os.environ.get("AI_GATEWAY_URL") or DEFAULT_GATEWAY_URL
    if not re.match(r"^https?://", url):
        raise InputError(f"--gateway-url {url}: expected an http(s):// URL")
    return url, "gateway", "AI_GATEWAY_API_KEY"


def _programs(binary: str, engine: str, lightpanda: Path | None) -> dict[str, str]:
    programs = agent_browser_programs(binary)
    if engine == "lightpanda":
        assert lightpanda is not None
        programs |= check_binary(lightpanda)
        return programs
    chromium = next(
        (
            shutil.which(n)
            for n in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(n)
        ),
        None,
    )
    if chromium is None:
        raise InputError(
            "--engine chrome needs Chromium: apt-get install -y chromium "
            "(agent-browser finds it by itself)"
        )
    programs["chromium"] = f"{program_version([chromium, '--version'])} ({chromium})"
    return programs


def build(request: BuildRequest) -> AgentBrowserChatBackend:
    spec, options, scripted_model = request.spec, request.options, request.scripted_model
    assert isinstance(options, ChatOptions)
    # What the run uses, defaults included, is written back: the run stores it, so that a
    # resume keeps it.
    options.engine = options.engine or "chrome"
    if options.engine != "lightpanda" and options.lightpanda is not None:
        raise InputError("--lightpanda only applies with --engine lightpanda")
    options.chat_answer = options.chat_answer or ANSWER_JOINED
    if options.search not in (None, "native"):
        raise InputError(
            f"--search {options.search}: agent-browser's chat loop offers the model only its "
            "own agent_browser tool and takes no extra one, and cannot be kept from search "
            "engines' pages; only --search native applies (the MCP runners, "
            "<suite>-mcp-run, offer tavily and none)"
        )
    options.search = "native"
    blocking = BLOCKING if spec.block_answer_sources else None
    session_prefix = options.session or DEFAULT_SESSION_PREFIX
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", session_prefix):
        raise InputError(
            f"--session {session_prefix}: letters, digits, hyphens and underscores only "
            "(agent-browser's rule), at most 40"
        )
    if spec.user_agent is not None and options.engine == "lightpanda":
        # Through agent-browser, Lightpanda ignores a value it refuses and sends its own.
        check_user_agent(spec.user_agent)
    endpoint_kind, key_env, model_source = "gateway", "AI_GATEWAY_API_KEY", "--model"
    if scripted_model is not None:
        if spec.model is not None:
            raise InputError(
                f"--model {spec.model}: the scripted oracle plays the model here; add "
                "--provider (or --gateway-url) to run a real one"
            )
        # The suite plays the model (localweb's oracle) behind a scripted gateway; each
        # attempt's PreparedTask carries that gateway's URL and key.
        provider, model, gateway_url = None, scripted_model, "(each attempt's scripted gateway)"
    else:
        chosen, model_source, named = _chosen_model(spec)
        if gemini_direct():
            provider, model = "google", _gemini_model(spec, chosen, named)
        else:
            provider, model = _model(spec, chosen, named)
        gateway_url, endpoint_kind, key_env = _endpoint(options)
    binary = node_binary(options.agent_browser, "agent-browser", "--agent-browser")
    lightpanda = None
    if options.engine == "lightpanda":
        lightpanda = Path(options.lightpanda) if options.lightpanda else bundled_binary()
    config = ChatConfig(
        agent_browser=binary,
        engine=options.engine,
        model=model,
        provider=provider,
        model_source=model_source,
        gateway_url=gateway_url,
        endpoint_kind=endpoint_kind,
        key_env=key_env,
        session_prefix=session_prefix,
        user_agent=spec.user_agent,
        lightpanda=str(lightpanda) if lightpanda else None,
        action_timeout_ms=options.action_timeout_ms,
        blocking=blocking,
        answer=options.chat_answer,
    )
    return AgentBrowserChatBackend(config, _programs(binary, options.engine, lightpanda))


DEFINITION = BackendDef(
    kind="chat",
    title="agent-browser's own chat loop",
    options=ChatOptions,
    build=build,
    run_dir=lambda suite, options: (
        Path("results") / f"{suite.name}-ab" / (options.engine or "chrome") / utc_stamp()
    ),
    prog_suffix="-ab-run",
    variant="engine",
    model_form="joined",
    default_timeout_s=DEFAULT_TIMEOUT_S,
    user_agent=True,
    isolation="fresh browser, HOME and agent-browser daemon per attempt (upstream: one "
    "session per worker, reused across tasks)",
    dataset_prompt=chat_prompt,
)
