"""The Lightpanda native agent: ``lightpanda agent --task ...``, one process per attempt.

Everything a row says comes from what the process left: stdout is the answer, the
``--trace`` file (always on, with tool results) gives the tool calls and the token counts,
and stderr's tail is kept for diagnosis. The binary defaults to the one inside the
``lightpanda`` PyPI package; ``--lightpanda PATH`` runs another build.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from agent_benchmarks.backends.base import (
    AgentOutcome,
    BackendDef,
    BuildRequest,
    PreparedTask,
    process_failure,
)
from agent_benchmarks.backends.lightpanda_trace import parse_usage_line, read_trace, strip_ansi
from agent_benchmarks.backends.web_routing import LIGHTPANDA_WEB_ROUTING, lightpanda_web_args
from agent_benchmarks.common.environ import current as current_environment
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
from agent_benchmarks.isolation.resources import AGENT, ENGINE, RoleRule
from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.search import (
    BASE_URL_ENV,
    CREDITS_PER_DEPTH,
    DEFAULT_SEARCH,
    KEY_ENV,
    SEARCH_SETTINGS,
    blocking_pattern,
    key_problem,
    summarise_calls,
)
from agent_benchmarks.spec.datasets import sha256_file
from agent_benchmarks.spec.provenance import default_run_dir
from agent_benchmarks.spec.run_spec import Options, option

NAME = "lightpanda-native"
# One process is the whole stack: its resource figures are one role, and say so.
NATIVE_ROLE = RoleRule(
    f"{ENGINE}+{AGENT}",
    exe=r"^lightpanda$",
    note="lightpanda agent: its agent loop and its browser engine are one process, measured "
    "together",
)

# Providers whose key Lightpanda reads from the environment; checked before a run starts
# so a missing key is one clear message rather than N failed tasks.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openai_compatible": ("OPENAI_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "vercel": ("AI_GATEWAY_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}
PROVIDERS = (*PROVIDER_KEYS, "ollama", "llama_cpp", "vertex", "codex")

# What Lightpanda prints when the model API fails (HTTP errors after its retries, bad
# replies): these are infrastructure failures, not wrong answers.
_MODEL_API_ERROR = re.compile(
    r"API error|Request failed|rate.?limit|overloaded|invalid api key|unauthori[sz]ed|"
    r"ConnectionRefused|connection refused|no (?:such )?model|not in the model list",
    re.IGNORECASE,
)
NO_RESPONSE = "(no response from model)"
# What upstream looks for in stderr to tell a model's safety refusal from a hiccup.
SAFETY_REFUSAL = "safety refusal"

# lightpanda agent --search-engine (1.0.2). auto takes the first engine whose key is set, in
# this order, else keenable's keyless public endpoint. Keys are read by Lightpanda from the
# environment it inherits (TAVILY_API_KEY included); only the engine's name is recorded.
SEARCH_ENGINES = ("auto", "brave", "tavily", "exa", "keenable")
SEARCH_KEYS: dict[str, str] = {
    "brave": "BRAVE_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "exa": "EXA_API_KEY",
}


def resolve_search_engine(pinned: str | None, environ: Any) -> dict[str, str]:
    """The engine Lightpanda's ``search`` tool will use, and how that was decided."""
    if pinned is not None and pinned != "auto":
        return {"engine": pinned, "chosen_by": f"--search-engine {pinned}"}
    for engine, key in SEARCH_KEYS.items():
        if environ.get(key):
            return {"engine": engine, "chosen_by": f"auto: {key} is set"}
    return {
        "engine": "keenable",
        "chosen_by": "auto: none of " + ", ".join(SEARCH_KEYS.values()) + " is set",
    }


STDERR_TAIL_CHARS = 4000
# Providers whose API the harness's model meter reads, with the base URL Lightpanda calls
# when no --base-url is given (openai_compatible: OPENAI_BASE_URL).
_METERED_PROVIDERS: dict[str, str | None] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "openai_compatible": None,
}


def bundled_binary() -> Path:
    """The binary the ``lightpanda`` package ships, found without importing the package
    (its browser clients bring asyncio, ssl and http: 3 MB the run process never uses)."""
    spec = importlib.util.find_spec("lightpanda")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("No module named 'lightpanda'", name="lightpanda")
    return Path(spec.origin).parent / "lightpanda"


def check_binary(path: Path) -> dict[str, str]:
    """Version and sha256 of a runnable Lightpanda binary; InputError if it is not one."""
    if not path.exists():
        raise InputError(f"--lightpanda {path}: no such file")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InputError(f"--lightpanda {path}: not an executable file")
    try:
        out = subprocess.run(
            [str(path), "version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise InputError(f"--lightpanda {path}: cannot run it: {exc.strerror}") from None
    version = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not version:
        raise InputError(f"--lightpanda {path}: `version` failed (exit {out.returncode})")
    return {"lightpanda": version[0].strip(), "lightpanda_sha256": sha256_file(path)}


# What bounds one attempt besides --timeout. Lightpanda 1.0.2 stops after 100 model turns
# (then makes one tool-less synthesis call) and has no token or cost cap: declared as such.
BUDGETS: dict[str, int | None] = {"max_turns": 100, "max_tokens": None, "max_cost_usd": None}


class LightpandaConfig(BaseModel):
    """What defines a Lightpanda run; stored in the manifest and reused by --resume."""

    model_config = ConfigDict(extra="forbid")

    binary: str
    provider: str
    model: str | None = None  # None: Lightpanda's own default for the provider
    # May hold "{task_id}", replaced per attempt (a per-task routing proxy or scripted model).
    base_url: str | None = None
    # lightpanda --user-agent (the whole header; Lightpanda forbids "Mozilla" in it).
    user_agent: str | None = None
    # lightpanda agent --search-engine, when pinned; None: not passed (Lightpanda's auto).
    search_engine: str | None = None
    # --search: native (Lightpanda's search as its engine choice has it) or tavily (its
    # search pinned to Tavily); Lightpanda cannot withhold its search, so never none.
    search_setting: str = DEFAULT_SEARCH


class LightpandaBackend:
    name = NAME
    model_protocol = "openai"  # a scripted model is reached as openai_compatible
    web_routing = LIGHTPANDA_WEB_ROUTING

    def __init__(
        self,
        config: LightpandaConfig,
        programs: dict[str, str],
        environ: dict[str, str] | None = None,
    ):
        self.config = config
        self._programs = programs
        # Which engine the `search` tool uses, resolved once from the keys set at the start.
        self.search = resolve_search_engine(
            config.search_engine, os.environ if environ is None else environ
        )

    def programs(self) -> dict[str, str]:
        return dict(self._programs)

    def program_probe(self) -> Callable[[], dict[str, str]]:
        """What :meth:`programs` says, found again on another machine (a cluster node)."""
        return functools.partial(check_binary, Path(self.config.binary))

    def settings(self) -> dict[str, Any]:
        settings = self.config.model_dump() | {"budgets": BUDGETS, "search": self.search}
        if self.config.search_setting == "tavily":
            # Lightpanda's own search tool makes the calls with its own request (1.0.2 sends
            # the query and max_results 10, Tavily's default depth: seen by the e2e test's
            # stand-in), not the web_search server's parameters; it drops results matching
            # --block-urls itself, uncounted (see tavily_spend).
            settings["search_via"] = (
                "lightpanda's search tool, --search-engine tavily (its own request: "
                "max_results 10, Tavily's default depth; results matching --block-urls "
                "dropped by Lightpanda before the model sees them, uncounted: rows list "
                "the results shown, and dropped is null when blocking)"
            )
        version = self._programs.get("lightpanda")
        default = DEFAULT_MODELS.get((version or "", self.config.provider))
        if self.config.model is None and default is not None:
            settings["default_model"] = default
            settings["default_model_source"] = (
                f"Lightpanda {version}'s default for --provider {self.config.provider} "
                "(not passed: Lightpanda picks it, as upstream's runner let it)"
            )
        return settings

    def meter_problem(self) -> str | None:
        """Why the harness's model meter cannot stand between Lightpanda and its model."""
        if self.config.provider in _METERED_PROVIDERS:
            return None
        return (
            f"--provider {self.config.provider}: Lightpanda speaks that provider's own API, "
            "which the harness's model meter does not read (it reads Anthropic Messages and "
            "OpenAI's APIs: --provider anthropic, openai or openai_compatible)"
        )

    def model_endpoint(self, prepared: PreparedTask) -> str | None:
        """Where this attempt's Lightpanda calls its model (its --base-url, else the
        provider's own API)."""
        if self.meter_problem() is not None:
            return None
        default = _METERED_PROVIDERS[self.config.provider] or os.environ.get("OPENAI_BASE_URL")
        return self.base_url_for(prepared) or default

    def base_url_for(self, prepared: PreparedTask) -> str | None:
        if prepared.base_url is not None:
            return prepared.base_url
        if self.config.base_url is None:
            return None
        return self.config.base_url.replace("{task_id}", quote(prepared.task.id, safe=""))

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        trace = prepared.workdir / "trace.jsonl"
        argv = [self.config.binary, "agent", "--provider", self.config.provider]
        if self.config.model:
            argv += ["--model", self.config.model]
        if self.config.user_agent is not None:
            argv += ["--user-agent", self.config.user_agent]
        if self.config.search_engine is not None:
            argv += ["--search-engine", self.config.search_engine]
        argv += ["--task", prepared.text, "--trace", str(trace), "--trace-results"]
        if prepared.system_prompt is not None:
            argv += ["--system-prompt", prepared.system_prompt]
        env = {**current_environment(), "LIGHTPANDA_DISABLE_TELEMETRY": "true", **prepared.env}
        base_url = self.base_url_for(prepared)
        if base_url is not None:
            argv += ["--base-url", base_url]
            if self.config.provider == "openai_compatible":
                env["OPENAI_BASE_URL"] = base_url
        for path in prepared.attachments:
            argv += ["--attach", str(path)]
        for pattern in prepared.block_urls:
            argv += ["--block-urls", pattern]
        argv += lightpanda_web_args(prepared.web)
        return ProcessSpec(
            argv=argv, env=env, cwd=prepared.workdir, timeout_s=None, roles=(NATIVE_ROLE,)
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        summary = read_trace(prepared.workdir / "trace.jsonl")
        stderr = strip_ansi(result.stderr)
        usage = summary.usage
        if usage.turns == 0:
            usage = parse_usage_line(stderr) or usage
        output = result.stdout.strip()
        details: dict[str, Any] = {"model_phases": summary.phases}
        if SAFETY_REFUSAL in stderr.lower():
            details["safety_refusal"] = True  # never retried as an empty answer (upstream)
        if summary.problems:
            details["trace_problems"] = summary.problems
        if self.search.get("engine") == "tavily":
            details["search"] = tavily_spend(summary.calls, prepared.block_urls)
        status, error_class, error = classify(result, output, stderr)
        return AgentOutcome(
            status=status,
            output=output,
            error_class=error_class,
            error=error,
            trace=summary.calls,
            usage=usage,
            details=details,
        )


def tavily_spend(calls: list[ToolCall], blocked: Sequence[str] = ()) -> dict[str, Any]:
    """``details.search`` for an attempt whose ``search`` tool asked Tavily (pinned, or
    Lightpanda's auto with TAVILY_API_KEY set), in the shape of the web_search server's, so
    compare shows the credits beside cost. Lightpanda makes the request itself and sends no
    search_depth (seen by the e2e test's stand-in), so each call that answered is one basic
    search; a call that failed is counted as an error, not as spend.

    Each call's ``urls`` are the results the model was shown, read from the trace (the
    tool's text, ``--trace-results``). Lightpanda 1.0.2 drops results whose URL matches its
    ``--block-urls`` before the model sees them, and says nothing of it: the list is
    renumbered, no count is kept, and Tavily's reply never reaches the harness. So with
    blocking, ``dropped`` is unknown (None), ``dropped_at_most`` bounds it (Lightpanda asks
    for ``max_results`` 10), and ``shown_blocked`` lists any shown result a pattern matches
    (none, while Lightpanda filters); without blocking nothing can be dropped."""
    credits = CREDITS_PER_DEPTH["basic"]
    records = []
    for call in calls:
        if call.name != "search":
            continue
        urls = _RESULT_URL.findall(call.output or "") if not call.error else []
        record: dict[str, Any] = {
            "query": call.args.get("query"),
            "urls": urls,
            "dropped": None if blocked else [],
            "latency_ms": call.latency_ms,
            "error": call.error,
            "credits": 0 if call.error else credits,
        }
        if blocked and not call.error:
            record["dropped_at_most"] = max(0, LIGHTPANDA_MAX_RESULTS - len(urls))
            record["shown_blocked"] = [u for u in urls if blocking_pattern(u, blocked)]
        records.append(record)
    summary = summarise_calls(records) | {
        "credits_rule": "one basic search per answered call (Lightpanda's own request)"
    }
    if blocked:
        summary["dropped"] = None
        summary["dropped_at_most"] = sum(r.get("dropped_at_most", 0) for r in records)
        summary["dropped_rule"] = DROPPED_RULE
    return summary


# Lightpanda 1.0.2's Tavily request asks for this many results (seen by the stand-in).
LIGHTPANDA_MAX_RESULTS = 10
# Why a blocking native run's rows say dropped: null (the manifest's search_via says it too).
DROPPED_RULE = (
    "Lightpanda drops results matching --block-urls before the model sees them and reports "
    "no count: urls are the results shown; dropped is unknown, at most max_results 10 less "
    "those shown"
)
# One result of its search tool's text: "N. **Title** — URL", then the snippet.
_RESULT_URL = re.compile(r"^\d+\. \*\*.*\*\* — (\S+)\s*$", re.MULTILINE)


def classify(result: ProcessResult, output: str, stderr: str) -> tuple[Any, str | None, str | None]:
    """(status, error_class, error) of a finished ``lightpanda agent`` process."""
    last_line = _last_error_line(stderr)
    failed = process_failure(result, "lightpanda")
    if failed is not None:
        status, error_class, error = failed
        return status, error_class, f"{error}: {last_line}" if error_class == "crash" else error
    if result.returncode != 0:
        kind = "model_api" if _MODEL_API_ERROR.search(stderr) else "agent_error"
        return "error", kind, f"exit {result.returncode}: {last_line}"
    if not output or output == NO_RESPONSE:
        return "empty", None, None
    return "ok", None, None


def _last_error_line(stderr: str) -> str:
    """The most telling line of stderr: the last one that says error, else the last one."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("$usage")]
    for line in reversed(lines):
        if "error" in line.lower():
            return line[:500]
    return lines[-1][:500] if lines else ""


# --- the command line ----------------------------------------------------------------------

# Upstream's defaults: --provider gemini and no --model, so Lightpanda's own default model.
DEFAULT_PROVIDER = "gemini"
# The model Lightpanda uses when none is passed, per (version, provider): seen on the wire
# (lightpanda 1.0.2 --provider gemini asks for models/gemini-3.8-flash:generateContent).
DEFAULT_MODELS: dict[tuple[str, str], str] = {("1.0.2", "gemini"): "gemini-3.8-flash"}
DEFAULT_TIMEOUT_S = 300.0  # upstream's; localweb keeps its own shorter default
DEFAULT_MEMORY_MAX_MB = 6000  # upstream's cap (systemd-run MemoryMax, no swap)


class LightpandaOptions(Options):
    """The native runner's own flags. ``--provider`` (default gemini, as upstream: its key is
    GOOGLE_API_KEY or GEMINI_API_KEY) and ``--model`` (default: Lightpanda's own for the
    provider) are shared run flags."""

    lightpanda: Path | None = option(
        help="the lightpanda binary to run (default: the one in the lightpanda package)"
    )
    base_url: str | None = option(
        help="the provider's API base URL; {task_id} in it is replaced per task"
    )
    search: str | None = option(
        help="the agent's web search: native (default; Lightpanda's search tool, its engine "
        f"as --search-engine says) or tavily (that tool pinned to Tavily; needs {KEY_ENV}); "
        "none is refused: lightpanda agent cannot withhold its search tool",
        choices=SEARCH_SETTINGS,
    )
    search_engine: str | None = option(
        help="the engine of Lightpanda's search tool (default: not passed, so Lightpanda's "
        "auto: BRAVE_API_KEY, TAVILY_API_KEY, EXA_API_KEY in that order, else keenable)",
        choices=SEARCH_ENGINES,
    )


def build(request: BuildRequest) -> LightpandaBackend:
    spec, options = request.spec, request.options
    assert isinstance(options, LightpandaOptions)
    binary = Path(options.lightpanda) if options.lightpanda else bundled_binary()
    programs = check_binary(binary)
    # What the run uses, defaults included, is written back: the run stores it, so that a
    # resume keeps it.
    options.search = options.search or DEFAULT_SEARCH
    if options.search == "none":
        raise InputError(
            "--search none: lightpanda agent has no option to withhold its search tool "
            "(see `lightpanda agent --help`); <suite>-mcp-run --search none can"
        )
    if options.search == "tavily":
        if options.search_engine not in (None, "tavily"):
            raise InputError(
                f"--search tavily pins Lightpanda's search to Tavily; --search-engine "
                f"{options.search_engine} says otherwise"
            )
        options.search_engine = "tavily"
    key = SEARCH_KEYS.get(options.search_engine or "")
    flag = "--search" if options.search == "tavily" else "--search-engine"
    if key is not None and not os.environ.get(key):
        raise InputError(f"{flag} {options.search_engine} needs {key} in the environment")
    if options.search_engine == "tavily" and request.spec.web != "replay":
        # Replaying, the archive answers the searches and Tavily is never asked. Else
        # Lightpanda asks https://api.tavily.com itself; the harness checks the key there
        # first (BASE_URL_ENV only points this check at a local stand-in, for tests).
        problem = key_problem(os.environ[KEY_ENV], os.environ.get(BASE_URL_ENV) or None)
        if problem is not None:
            raise InputError(f"{flag} tavily: {problem}")
    if spec.user_agent is not None:
        check_user_agent(spec.user_agent)
    if request.scripted_model is not None:
        # The suite plays the model (localweb's oracle) over the OpenAI-compatible protocol;
        # each attempt's PreparedTask carries the scripted server's URL for that episode.
        config = LightpandaConfig(
            binary=str(binary),
            provider="openai_compatible",
            model=request.scripted_model,
            user_agent=spec.user_agent,
            search_engine=options.search_engine,
            search_setting=options.search,
        )
        return LightpandaBackend(config, programs)
    spec.provider = spec.provider or DEFAULT_PROVIDER
    if spec.provider not in PROVIDERS:
        raise InputError(
            f"--provider {spec.provider}: not a Lightpanda provider ({', '.join(PROVIDERS)})"
        )
    keys = PROVIDER_KEYS.get(spec.provider, ())
    if keys and not any(os.environ.get(k) for k in keys):
        raise InputError(
            f"--provider {spec.provider} needs {' or '.join(keys)} in the environment "
            "(or run localweb-run, which needs no key)"
        )
    if spec.provider == "openai_compatible" and not (
        options.base_url or os.environ.get("OPENAI_BASE_URL")
    ):
        raise InputError("--provider openai_compatible needs --base-url or OPENAI_BASE_URL")
    config = LightpandaConfig(
        binary=str(binary),
        provider=spec.provider,
        model=spec.model,
        base_url=options.base_url,
        user_agent=spec.user_agent,
        search_engine=options.search_engine,
        search_setting=options.search,
    )
    return LightpandaBackend(config, programs)


def check_user_agent(user_agent: str) -> None:
    """Lightpanda's own rule, checked before the run rather than in every attempt."""
    if "Mozilla" in user_agent or not all(32 <= ord(c) < 127 for c in user_agent):
        raise InputError(
            f"--user-agent {user_agent!r}: Lightpanda takes printable ASCII without "
            '"Mozilla" (it does not impersonate other browsers)'
        )


DEFINITION = BackendDef(
    kind="native",
    title="the Lightpanda agent",
    options=LightpandaOptions,
    build=build,
    run_dir=lambda suite, options: default_run_dir(suite.name),
    default_timeout_s=DEFAULT_TIMEOUT_S,
    default_memory_max_mb=DEFAULT_MEMORY_MAX_MB,
    user_agent=True,
    empty_retry=True,
    isolation="a fresh lightpanda process per attempt, in the attempt's own folder (as upstream)",
)
