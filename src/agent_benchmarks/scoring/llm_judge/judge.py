"""Judge WebBench prediction rows under a protocol: cache lookups, a worker pool, retries.

What each row is sent, how the reply is read and how the provider is called are the
protocol's (``protocol.py``). Rows run on ``workers`` threads; 0 or 1 judges them one after
another in the calling thread.

Retries (the strict protocol; the upstream protocol makes one call per row, and a row whose
call fails is INVALID, never cached): a call that fails with HTTP 408, 429 or any 5xx, a
timeout or a connection error is tried again, up to ``max_attempts`` calls in all. Before
each retry we wait what the server asked (``retry-after-ms``, else ``retry-after`` in
seconds or as an HTTP date) or, when it did not say, ``backoff_base_s * 2**(n-1)`` plus up
to 25% jitter after the n-th failure; every wait is capped at ``max_backoff_s``. Any other
error (400, 401, 403, 404, a malformed response...) is not retried. A row whose calls all
fail is a ``judge_error`` result carrying the last error (key masked): reported, never
counted as NO, never cached.

The SDK client is built only when some row is not in the cache, so re-grading a run whose
judgements are all cached needs no API key.
"""

from __future__ import annotations

import random
import time
import urllib.parse
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.scoring.llm_judge.cache import CacheKey, JudgeCache, cache_key
from agent_benchmarks.scoring.llm_judge.models import JudgeConfig, JudgeResult
from agent_benchmarks.scoring.llm_judge.prompt import sha256_text
from agent_benchmarks.scoring.llm_judge.protocol import (
    CallSettings,
    JudgeProtocol,
    call_settings,
    get_protocol,
)
from agent_benchmarks.scoring.llm_judge.providers import (
    ErrorInfo,
    JudgeClient,
    cost_usd,
    infer_provider,
    make_client,
)

# Indirection so tests can observe the waits; always called with seconds >= 0.
_sleep: Callable[[float], None] = time.sleep


def retry_delay(config: JudgeConfig, failures: int, retry_after_s: float | None) -> float:
    """Seconds to wait after the ``failures``-th failed call of a row."""
    if retry_after_s is not None:
        return min(max(0.0, retry_after_s), config.max_backoff_s)
    delay = config.backoff_base_s * (2 ** (failures - 1))
    delay *= 1 + 0.25 * random.random()
    return min(delay, config.max_backoff_s)


def reference_for(row: PredictionRow, references: Mapping[str, str] | None) -> str | None:
    """The reference answer shown to the judge: ``references[row.id]``, else ``row.gold``."""
    if references is not None and references.get(row.id):
        return references[row.id]
    return row.gold


@dataclass(frozen=True)
class _Judging:
    """What every row of one judge_rows call shares."""

    client: JudgeClient
    config: JudgeConfig
    protocol: JudgeProtocol
    call: CallSettings


def _judge_one(judging: _Judging, row: PredictionRow, prompt: str) -> JudgeResult:
    client, config, protocol = judging.client, judging.config, judging.protocol
    max_attempts = judging.call.max_attempts
    last: ErrorInfo | None = None
    calls = 0
    while calls < max_attempts:
        calls += 1
        try:
            completion = client.complete(protocol.system_prompt, prompt)
        except Exception as exc:
            last = client.classify(exc)
            if not last.retryable or calls >= max_attempts:
                break
            _sleep(retry_delay(config, calls, last.retry_after_s))
            continue
        parsed = protocol.parse_verdict(completion.text)
        return JudgeResult(
            id=row.id,
            attempt=row.attempt,
            verdict=parsed.verdict,
            reasoning=parsed.reasoning,
            raw=completion.text,
            error=None if parsed.problem is None else f"unparseable reply: {parsed.problem}",
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost_usd=cost_usd(config.model, completion.input_tokens, completion.output_tokens),
            calls=calls,
        )
    assert last is not None
    if max_attempts == 1:
        why = "one call per row"
    elif last.retryable:
        why = f"gave up after {calls} attempts"
    else:
        why = f"not retried ({calls} call)"
    return JudgeResult(
        id=row.id,
        attempt=row.attempt,
        verdict=protocol.failed_call_verdict,
        error=f"judge call failed: {last.message} [{why}]",
        call_failed=True,
        calls=calls,
    )


def _from_cache(row: PredictionRow, entry: Mapping[str, Any], model: str) -> JudgeResult:
    input_tokens = int(entry.get("input_tokens") or 0)
    output_tokens = int(entry.get("output_tokens") or 0)
    return JudgeResult(
        id=row.id,
        attempt=row.attempt,
        verdict=entry["verdict"],
        reasoning=entry.get("reasoning") or "",
        raw=entry.get("raw") or "",
        error=entry.get("error"),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost_usd(model, input_tokens, output_tokens),
        cached=True,
        calls=0,
    )


def judge_rows(
    rows: list[PredictionRow],
    config: JudgeConfig,
    cache_path: Path | None,
    references: dict[str, str] | None = None,
    progress: Callable[[JudgeResult], None] | None = None,
) -> list[JudgeResult]:
    """Judge every row given (the caller picks which), results in input order.

    ``cache_path`` (normally ``<run_dir>/judge_cache.jsonl``) is read for earlier
    judgements and appended with new ones; None disables the cache. ``config.no_cache``
    skips the lookups but still appends. ``references`` maps row id to a reference answer
    (default: the row's ``gold``). ``progress`` is called once per row, from the calling
    thread, as results arrive: cached ones first, then in completion order.

    Raises :class:`JudgeConfigError` (before any call) when the provider cannot be told or
    its API key is missing; every other failure is a result (the protocol's
    ``failed_call_verdict``).
    """
    infer_provider(config)  # fail on an unknown provider even when everything is cached
    protocol = get_protocol(config.protocol)
    p_hash = protocol.prompt_hash()
    prompts = [protocol.build_prompt(row, reference_for(row, references)) for row in rows]
    keys: list[CacheKey] = [
        cache_key(config.model, protocol.name, p_hash, sha256_text(_sent(protocol, prompt)))
        for prompt in prompts
    ]
    results: list[JudgeResult | None] = [None] * len(rows)
    cache = JudgeCache(cache_path) if cache_path is not None else None
    try:
        todo: list[int] = []
        for index, row in enumerate(rows):
            entry = cache.get(keys[index]) if cache is not None and not config.no_cache else None
            if entry is None:
                todo.append(index)
                continue
            results[index] = _from_cache(row, entry, config.model)
            if progress is not None:
                progress(results[index])
        if todo:
            call = call_settings(config)
            client = make_client(config, call)
            judging = _Judging(client, config, protocol, call)
            try:
                _run_pool(judging, rows, prompts, keys, todo, results, cache, progress)
            finally:
                client.close()
    finally:
        if cache is not None:
            cache.close()
    return [result for result in results if result is not None]


def _sent(protocol: JudgeProtocol, prompt: str) -> str:
    """Everything a row's request carries, for its cache key."""
    return f"{protocol.system_prompt or ''}\n\n{prompt}"


def _run_pool(
    judging: _Judging,
    rows: list[PredictionRow],
    prompts: list[str],
    keys: list[CacheKey],
    todo: list[int],
    results: list[JudgeResult | None],
    cache: JudgeCache | None,
    progress: Callable[[JudgeResult], None] | None,
) -> None:
    def record(index: int, result: JudgeResult) -> None:
        if cache is not None and not result.call_failed:
            cache.put(keys[index], result.id, result.model_dump())
        results[index] = result
        if progress is not None:
            progress(result)

    if judging.config.workers <= 1:
        for index in todo:
            record(index, _judge_one(judging, rows[index], prompts[index]))
        return
    pool = ThreadPoolExecutor(
        max_workers=min(judging.config.workers, len(todo)), thread_name_prefix="judge"
    )
    try:
        futures: dict[Future[JudgeResult], int] = {
            pool.submit(_judge_one, judging, rows[index], prompts[index]): index for index in todo
        }
        for future in as_completed(futures):
            record(futures[future], future.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _display_url(url: str | None) -> str | None:
    """A base URL fit to record: no user info, query or fragment."""
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def judge_info(config: JudgeConfig) -> dict[str, Any]:
    """What identifies the judge, for ``scores.json``: no run manifest is needed to tell
    which protocol, model, prompt and call settings produced the verdicts."""
    protocol = get_protocol(config.protocol)
    return {
        "kind": "llm_judge",
        "protocol": protocol.name,
        "model": config.model,
        "provider": infer_provider(config),
        "base_url": _display_url(config.base_url),
        "prompt_hash": protocol.prompt_hash(),
        "system_prompt": protocol.system_prompt is not None,
        "judges_empty_answers": protocol.judges_empty_answers,
        "failed_call_verdict": protocol.failed_call_verdict,
        "workers": config.workers,
        "call": call_settings(config).record(),
    }


def judge_summary(results: list[JudgeResult]) -> dict[str, Any]:
    """Verdict counts, calls, tokens and cost of a set of results.

    ``input_tokens``/``output_tokens``/``cost_usd`` cover every judgement (cached ones at
    what they cost when made); ``spent`` covers only the calls made this time. A cost is
    None when some judgement's model has no price.
    """

    def totals(chosen: list[JudgeResult]) -> dict[str, Any]:
        judged = [r for r in chosen if not r.call_failed]
        costs = [r.cost_usd for r in judged]
        return {
            "input_tokens": sum(r.input_tokens for r in chosen),
            "output_tokens": sum(r.output_tokens for r in chosen),
            "cost_usd": (
                None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6)
            ),
        }

    verdicts = {name: 0 for name in ("YES", "NO", "INVALID", "judge_error")}
    for result in results:
        verdicts[result.verdict] += 1
    return {
        "n": len(results),
        "verdicts": verdicts,
        "n_cached": sum(r.cached for r in results),
        "n_call_failed": sum(r.call_failed for r in results),
        "calls": sum(r.calls for r in results),
        **totals(results),
        "spent": totals([r for r in results if not r.cached]),
    }
