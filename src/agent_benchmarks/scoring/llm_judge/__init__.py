"""The WebBench LLM judge: text only, two-line verdicts, cached, retried, priced.

Typical use::

    config = JudgeConfig(model="claude-sonnet-4-6", workers=8)
    results = judge_rows(rows, config, run_dir / CACHE_FILE_NAME)
    grader_info = judge_info(config)

See ``prompt.py`` for what the judge sees and how its reply is parsed, ``judge.py`` for
retries and ``providers.py`` for the SDKs, keys and prices.
"""

from agent_benchmarks.scoring.llm_judge.cache import CACHE_FILE_NAME, JudgeCache
from agent_benchmarks.scoring.llm_judge.judge import (
    judge_info,
    judge_rows,
    judge_summary,
    reference_for,
)
from agent_benchmarks.scoring.llm_judge.models import (
    JudgeConfig,
    JudgeConfigError,
    JudgeResult,
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
from agent_benchmarks.scoring.llm_judge.providers import (
    KEY_ENV_VARS,
    PRICES_PER_MTOK,
    cost_usd,
    infer_provider,
    missing_judge_key,
)

__all__ = [
    "CACHE_FILE_NAME",
    "KEY_ENV_VARS",
    "MAX_OUTPUT_CHARS",
    "MAX_PAGE_OUTPUTS",
    "PRICES_PER_MTOK",
    "PROMPT_VARIANT",
    "JudgeCache",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeResult",
    "ParsedVerdict",
    "ProviderName",
    "Verdict",
    "build_prompt",
    "cost_usd",
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
