"""The price table: built-in prices, model id matching, cost, and --prices override files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.pricing import (
    PRICE_TABLE_VERSION,
    PRICES,
    ModelPrice,
    load_price_table,
)
from agent_benchmarks.records.schema import Usage

MILLION = 1_000_000


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_built_in_table_records_its_version_and_source() -> None:
    table = load_price_table(None)
    assert table.version == PRICE_TABLE_VERSION
    assert table.source == "built-in"
    assert table.models == PRICES


def test_sonnet_4_6_cost_of_a_million_of_each() -> None:
    usage = Usage(
        input_tokens=MILLION,
        cache_read_tokens=MILLION,
        cache_write_tokens=MILLION,
        output_tokens=MILLION,
    )
    assert load_price_table(None).cost(usage, "claude-sonnet-4-6") == pytest.approx(
        3 + 0.30 + 3.75 + 15
    )


def test_cost_counts_each_token_kind_at_its_own_price() -> None:
    table = load_price_table(None)
    assert table.cost(Usage(input_tokens=2000), "claude-haiku-4-5") == 0.002
    assert table.cost(Usage(cache_read_tokens=2000), "claude-haiku-4-5") == 0.0002
    assert table.cost(Usage(cache_write_tokens=2000), "claude-haiku-4-5") == 0.0025
    assert table.cost(Usage(output_tokens=2000), "claude-haiku-4-5") == 0.01


def test_cost_is_rounded_to_six_decimals() -> None:
    cost = load_price_table(None).cost(Usage(input_tokens=1, output_tokens=1), "gpt-5-mini")
    assert cost == 0.000002  # 0.25e-6 + 2e-6 = 2.25e-6


def test_zero_usage_on_a_known_model_costs_zero() -> None:
    assert load_price_table(None).cost(Usage(), "gpt-5") == 0.0


@pytest.mark.parametrize(
    "model",
    [
        "anthropic/claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
        "anthropic/claude-sonnet-4-5-20250929",
        "claude-sonnet-4-5@20250929",
        "Claude-Sonnet-4-5",
    ],
)
def test_provider_prefix_and_date_suffix_are_tolerated(model: str) -> None:
    assert load_price_table(None).price_for(model) == PRICES["claude-sonnet-4-5"]


def test_openai_dated_id_and_gemini_models_prefix() -> None:
    table = load_price_table(None)
    assert table.price_for("gpt-5-mini-2025-08-07") == PRICES["gpt-5-mini"]
    assert table.price_for("models/gemini-2.5-flash") == PRICES["gemini-2.5-flash"]


def test_matching_never_falls_back_to_a_different_model() -> None:
    table = load_price_table(None)
    assert table.price_for("gpt-5-nano") is None
    assert table.price_for("claude-sonnet-4") is None


@pytest.mark.parametrize("model", [None, "", "some-local-model", "ollama/qwen3.5:latest"])
def test_unknown_model_has_no_price_and_no_cost(model: str | None) -> None:
    table = load_price_table(None)
    assert table.price_for(model) is None
    assert table.cost(Usage(input_tokens=1000, output_tokens=1000), model) is None


def test_override_file_wins_and_extends(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "prices.json",
        {
            "version": "acme-contract-2026",
            "models": {
                "claude-sonnet-4-6": {
                    "input": 2,
                    "cache_read": 0.2,
                    "cache_write": 2.5,
                    "output": 10,
                },
                "qwen3.5": {"input": 0, "cache_read": 0, "cache_write": 0, "output": 0},
            },
        },
    )
    table = load_price_table(path)
    assert table.price_for("claude-sonnet-4-6") == ModelPrice(
        input=2, cache_read=0.2, cache_write=2.5, output=10
    )
    assert table.cost(Usage(input_tokens=MILLION), "anthropic/claude-sonnet-4-6") == 2
    assert table.cost(Usage(input_tokens=MILLION), "qwen3.5") == 0  # free, and known to be
    assert table.price_for("gpt-5") == PRICES["gpt-5"]  # untouched entries stay
    assert table.version == "acme-contract-2026"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert str(path) in table.source
    assert digest in table.source
    assert PRICE_TABLE_VERSION in table.source
    assert PRICES["claude-sonnet-4-6"].input == 3  # the built-in table is not modified


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not JSON"),
        (json.dumps(["claude-sonnet-4-6"]), 'expected a JSON object with "version" and "models"'),
        (json.dumps({"models": {}}), "version: Field required"),
        (json.dumps({"version": "v1", "models": {"m": {"input": 1}}}), "models.m.cache_read"),
        (
            json.dumps(
                {
                    "version": "v1",
                    "models": {"m": {"input": -1, "cache_read": 0, "cache_write": 0, "output": 1}},
                }
            ),
            "models.m.input: Input should be greater than or equal to 0",
        ),
        (
            json.dumps(
                {
                    "version": "v1",
                    "models": {
                        "m": {"input": 1, "cache_read": 0, "cache_write": 0, "output": "lots"}
                    },
                }
            ),
            "models.m.output",
        ),
        (json.dumps({"version": "v1", "models": {}, "currency": "EUR"}), "currency"),
    ],
)
def test_bad_override_file_names_the_file_and_the_problem(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_price_table(path)
    message = str(info.value)
    assert message.startswith(f"price file {path}: ")
    assert problem in message


def test_missing_override_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"price file .*nowhere\.json: cannot read it"):
        load_price_table(tmp_path / "nowhere.json")
