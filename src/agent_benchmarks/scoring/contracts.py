"""Postcondition contracts: deterministic checks of an episode, clause by clause.

A contract is an answer clause plus, for tasks that change state, clauses checked against
the server's own record of the episode (:class:`SiteRecord`: the requests it served, the
cart it holds, the forms that arrived). The agent's claim alone never satisfies a state
clause. Every clause reports pass or fail with a reason, so a grader can say exactly which
part of a task failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field


class RequestSeen(BaseModel):
    method: str
    path: str  # site path with query, without the per-task prefix
    status: int


class FormSeen(BaseModel):
    fields: dict[str, Any]
    confirmation: str


class OrderSeen(BaseModel):
    number: str
    member: str
    items: dict[str, int]  # sku -> quantity
    total: str


class SiteRecord(BaseModel):
    """What the site itself recorded for one task: the runner stores it in the row."""

    requests: list[RequestSeen] = Field(default_factory=list)
    cart: dict[str, int] = Field(default_factory=dict)
    forms: list[FormSeen] = Field(default_factory=list)
    # The member account's settings as the site holds them, and the orders placed in the
    # episode (rows written before logged-in episodes have neither).
    settings: dict[str, str] = Field(default_factory=dict)
    orders: list[OrderSeen] = Field(default_factory=list)


@dataclass(frozen=True)
class ClauseResult:
    clause: str
    passed: bool
    reason: str


_QUOTES = "\"'`“”‘’"


def normalize_answer(text: str) -> str:
    """Forgive presentation, not content: case, outer quotes, markdown emphasis, a final
    full stop and runs of whitespace."""
    text = re.sub(r"\s+", " ", text.replace("**", "").replace("__", ""))
    previous = None
    while text != previous:  # peel quotes, full stops and spaces in any nesting
        previous = text
        text = text.strip().strip(_QUOTES).rstrip(".")
    return text.casefold()


@dataclass(frozen=True)
class AnswerIs:
    """The answer equals one of the accepted values (after :func:`normalize_answer`)."""

    accepted: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"answer is {self.accepted[0]!r}"

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        got = normalize_answer(answer or "")
        ok = got in {normalize_answer(a) for a in self.accepted}
        return ClauseResult(self.name, ok, "matches" if ok else f"got {answer!r}")


@dataclass(frozen=True)
class AnswerContains:
    """Every part appears in the answer (case-insensitive), in any order."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        return "answer mentions " + ", ".join(repr(p) for p in self.parts)

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        haystack = normalize_answer(answer or "")
        missing = [p for p in self.parts if p.casefold() not in haystack]
        if missing:
            return ClauseResult(self.name, False, f"missing {', '.join(map(repr, missing))}")
        return ClauseResult(self.name, True, "all present")


def _no_record(name: str) -> ClauseResult:
    return ClauseResult(name, False, "no server record for this episode in the row")


@dataclass(frozen=True)
class Requested:
    """The server served this request (method and path, query included, prefix match)."""

    method: str
    path: str
    status: int | None = None

    @property
    def name(self) -> str:
        status = f" -> {self.status}" if self.status else ""
        return f"server saw {self.method} {self.path}{status}"

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        if record is None:
            return _no_record(self.name)
        for seen in record.requests:
            if (
                seen.method == self.method
                and seen.path.startswith(self.path)
                and (self.status is None or seen.status == self.status)
            ):
                return ClauseResult(self.name, True, f"{seen.method} {seen.path} {seen.status}")
        return ClauseResult(self.name, False, "no such request in the server's log")


@dataclass(frozen=True)
class CartHolds:
    """The server-side cart holds at least ``quantity`` of ``sku``."""

    sku: str
    quantity: int = 1

    @property
    def name(self) -> str:
        return f"cart holds {self.quantity} x {self.sku}"

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        if record is None:
            return _no_record(self.name)
        have = record.cart.get(self.sku, 0)
        ok = have >= self.quantity
        return ClauseResult(self.name, ok, f"cart has {have} x {self.sku}")


@dataclass(frozen=True)
class FormArrived:
    """A submission with these field values reached the server."""

    fields: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str:
        return "form arrived with " + ", ".join(f"{k}={v!r}" for k, v in self.fields)

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        if record is None:
            return _no_record(self.name)
        for form in record.forms:
            if all(form.fields.get(k) == v for k, v in self.fields):
                return ClauseResult(self.name, True, f"confirmation {form.confirmation}")
        if not record.forms:
            return ClauseResult(self.name, False, "no form submission reached the server")
        return ClauseResult(
            self.name, False, f"{len(record.forms)} submission(s), none with these values"
        )


@dataclass(frozen=True)
class SettingIs:
    """The member account's setting ``setting`` holds ``value`` on the server."""

    setting: str
    value: str

    @property
    def name(self) -> str:
        return f"account setting {self.setting} is {self.value!r}"

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        if record is None:
            return _no_record(self.name)
        have = record.settings.get(self.setting)
        ok = have == self.value
        return ClauseResult(self.name, ok, f"the server holds {self.setting}={have!r}")


@dataclass(frozen=True)
class OrderPlaced:
    """An order of exactly these items (sku, quantity) was placed by ``member``."""

    items: tuple[tuple[str, int], ...]
    member: str

    @property
    def name(self) -> str:
        bought = ", ".join(f"{qty} x {sku}" for sku, qty in self.items)
        return f"order placed by {self.member} for {bought}"

    def check(self, answer: str | None, record: SiteRecord | None) -> ClauseResult:
        if record is None:
            return _no_record(self.name)
        wanted = dict(self.items)
        for order in record.orders:
            if order.member == self.member and order.items == wanted:
                return ClauseResult(self.name, True, f"order {order.number}")
        if not record.orders:
            return ClauseResult(self.name, False, "no order reached the server")
        return ClauseResult(
            self.name, False, f"{len(record.orders)} order(s), none of exactly these items"
        )


Clause = AnswerIs | AnswerContains | Requested | CartHolds | FormArrived | SettingIs | OrderPlaced


@dataclass(frozen=True)
class Contract:
    clauses: tuple[Clause, ...]

    def check(self, answer: str | None, record: SiteRecord | None) -> list[ClauseResult]:
        return [clause.check(answer, record) for clause in self.clauses]

    def describe(self) -> list[str]:
        return [clause.name for clause in self.clauses]
