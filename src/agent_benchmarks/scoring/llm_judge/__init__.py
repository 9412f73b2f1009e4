"""The WebBench LLM judge: text only, two protocols, cached, priced.

Typical use::

    config = JudgeConfig(model=UPSTREAM.default_model, protocol="upstream", workers=8)
    results = judge_rows(rows, config, run_dir / CACHE_FILE_NAME)
    grader_info = judge_info(config)

See ``protocol.py`` for the two protocols (``upstream``, the default, and ``strict``),
``upstream_prompt.py`` and ``prompt.py`` for what each shows the judge and how it reads the
reply, ``judge.py`` for the worker pool, the cache and retries, and ``providers.py`` for the
SDKs, keys and prices.
"""

from agent_benchmarks.scoring.llm_judge.cache import CACHE_FILE_NAME, JudgeCache
from agent_benchmarks.scoring.llm_judge.judge import (
    judge_info,
    judge_rows,
    judge_summary,
    reference_for,
)
from agent_benchmarks.scoring.llm_judge.models import (
    PROTOCOL_NAMES,
    JudgeConfig,
    JudgeConfigError,
    JudgeResult,
    ProtocolName,
    ProviderName,
    Verdict,
)
from agent_benchmarks.scoring.llm_judge.prompt import (
    MAX_OUTPUT_CHARS,
    MAX_PAGE_OUTPUTS,
    PROMPT_VARIANT,
    ParsedVerdict,
    build_prompt,
    page_reading_calls,
    parse_verdict,
    prompt_hash,
    visited_urls,
)
from agent_benchmarks.scoring.llm_judge.protocol import (
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    STRICT,
    UPSTREAM,
    CallSettings,
    JudgeProtocol,
    call_settings,
    get_protocol,
)
from agent_benchmarks.scoring.llm_judge.providers import (
    KEY_ENV_VARS,
    PRICES_PER_MTOK,
    cost_usd,
    infer_provider,
    missing_judge_key,
)

__all__ = [
    "CACHE_FILE_NAME",
    "DEFAULT_PROTOCOL",
    "KEY_ENV_VARS",
    "MAX_OUTPUT_CHARS",
    "MAX_PAGE_OUTPUTS",
    "PRICES_PER_MTOK",
    "PROMPT_VARIANT",
    "PROTOCOLS",
    "PROTOCOL_NAMES",
    "STRICT",
    "UPSTREAM",
    "CallSettings",
    "JudgeCache",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeProtocol",
    "JudgeResult",
    "ParsedVerdict",
    "ProtocolName",
    "ProviderName",
    "Verdict",
    "build_prompt",
    "call_settings",
    "cost_usd",
    "get_protocol",
    "infer_provider",
    "judge_info",
    "judge_rows",
    "judge_summary",
    "missing_judge_key",
    "page_reading_calls",
    "parse_verdict",
    "prompt_hash",
    "reference_for",
    "visited_urls",
]
