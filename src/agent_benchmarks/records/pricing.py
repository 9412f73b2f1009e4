"""A versioned model price table, and the cost of an attempt's token usage.

Costs are only comparable when everyone knows which prices produced them, so a run records the
table's version and source (built-in, or the user's ``--prices`` file and its sha256). A model
the table does not know has no cost (None), never a cost of 0.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Usage

PRICE_TABLE_VERSION = "2026-11-01"


class ModelPrice(BaseModel):
    """USD per million tokens. ``cache_write`` is the 5-minute cache write price."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    input: float = Field(ge=0)
    cache_read: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    output: float = Field(ge=0)


# List prices as of PRICE_TABLE_VERSION. Prices change and deals differ: users override or
# extend entries with --prices FILE, and the run records which table it used.
PRICES: dict[str, ModelPrice] = {
    "claude-sonnet-4-6": ModelPrice(input=3, cache_read=0.30, cache_write=3.75, output=15),
    "claude-sonnet-4-5": ModelPrice(input=3, cache_read=0.30, cache_write=3.75, output=15),
    "claude-opus-4-6": ModelPrice(input=5, cache_read=0.50, cache_write=6.25, output=25),
    "claude-haiku-4-5": ModelPrice(input=1, cache_read=0.10, cache_write=1.25, output=5),
    "gpt-5": ModelPrice(input=1.25, cache_read=0.125, cache_write=1.25, output=10),
    "gpt-5-mini": ModelPrice(input=0.25, cache_read=0.025, cache_write=0.25, output=2),
    "gemini-2.5-pro": ModelPrice(input=1.25, cache_read=0.125, cache_write=1.25, output=10),
    "gemini-2.5-flash": ModelPrice(input=0.30, cache_read=0.03, cache_write=0.30, output=2.50),
}

# A snapshot date after the model name: Anthropic's "-20250929", Vertex's "@20250929",
# OpenAI's "-2025-08-07".
_DATE_SUFFIX = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2})$")


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = Field(min_length=1)
    models: dict[str, ModelPrice]


class PriceTable(BaseModel):
    """Prices by model id, with the version and source a run records for provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    source: str  # "built-in", or the override file's path and sha256
    models: dict[str, ModelPrice]

    def price_for(self, model: str | None) -> ModelPrice | None:
        """The model's price: by exact id, then without a provider prefix or date suffix."""
        if not model:
            return None
        if model in self.models:
            return self.models[model]
        name = model.strip().lower().rsplit("/", 1)[-1]
        for candidate in (name, _DATE_SUFFIX.sub("", name)):
            if candidate in self.models:
                return self.models[candidate]
        return None

    def cost(self, usage: Usage, model: str | None) -> float | None:
        """USD for ``usage`` on ``model``, or None when the model has no price here."""
        price = self.price_for(model)
        if price is None:
            return None
        # Usage.input_tokens excludes cache reads and writes, so the four counts do not overlap.
        total = (
            usage.input_tokens * price.input
            + usage.cache_read_tokens * price.cache_read
            + usage.cache_write_tokens * price.cache_write
            + usage.output_tokens * price.output
        )
        return round(total / 1_000_000, 6)


def load_price_table(path: Path | None) -> PriceTable:
    """The built-in table, or with ``path`` (a ``--prices`` JSON file) overriding and extending it.

    The file's shape: ``{"version": "...", "models": {"<model id>": {"input": ..., "cache_read":
    ..., "cache_write": ..., "output": ...}}}``, prices in USD per million tokens.
    """
    if path is None:
        return PriceTable(version=PRICE_TABLE_VERSION, source="built-in", models=dict(PRICES))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"price file {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"price file {path}: not JSON ({exc})") from None
    try:
        overrides = _PriceFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"price file {path}: {_describe(exc)}") from None
    digest = hashlib.sha256(raw).hexdigest()
    return PriceTable(
        version=overrides.version,
        source=f"{path} (sha256 {digest}) over built-in {PRICE_TABLE_VERSION}",
        models={**PRICES, **overrides.models},
    )


def _describe(exc: ValidationError) -> str:
    """The first problem, as ``where: what``, e.g. ``models.gpt-5.input: must be >= 0``."""
    first = exc.errors()[0]
    if not first["loc"]:
        return 'expected a JSON object with "version" and "models"'
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"
