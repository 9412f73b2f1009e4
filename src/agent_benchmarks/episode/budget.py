"""One budget for every agent: steps (tool calls), tokens, dollars, and the temperature.

Agents cap different things, or nothing: Claude Code counts turns and dollars, Lightpanda
stops after 100 model turns, agent-browser's chat after 50 requests, Codex not at all. So
the run's budget (``--max-steps``, ``--max-tokens``, ``--max-cost-usd``, ``--temperature``)
is the harness's, enforced the same way for every agent at the model boundary (the model
meter, :mod:`.meter`), and recorded in the manifest in the same fields whatever the agent
(``settings.budgets``, :func:`budget_record`), so two agents given one budget compare.

A step is one tool call. The reply that asks for the call past the budget is not given to
the agent; nor is a reply that takes the tokens or dollars past theirs. The agent is told
its budget is spent (an error reply it does not retry) and the attempt ends with status
``budget``: a wrong answer, never an infrastructure failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What ends an attempt, as details.meter.budget_exhausted names it.
STEPS, TOKENS, COST = "steps", "tokens", "cost_usd"
# How each budget maps onto the keys eligibility reads (report/eligibility.BUDGET_KEYS).
_FIELDS = {STEPS: "max_steps", TOKENS: "max_tokens", COST: "max_cost_usd"}
# An agent's own caps, as its backend records them (settings.backend.budgets).
_AGENT_KEYS = {STEPS: "max_turns", TOKENS: "max_tokens", COST: "max_cost_usd"}

HOW = (
    "enforced by the harness at the model boundary (its model meter, between the agent and "
    "its model API): a step is one tool call; the model reply asking for the call past "
    "max_steps, or taking the tokens past max_tokens or the price-table cost past "
    "max_cost_usd, is withheld, the agent is answered that its budget is spent, and the "
    "attempt ends with status budget (a wrong answer)"
)


@dataclass(frozen=True)
class Budget:
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    temperature: float | None = None

    def any(self) -> bool:
        """Whether the harness has anything to enforce or set."""
        return any(
            v is not None
            for v in (self.max_steps, self.max_tokens, self.max_cost_usd, self.temperature)
        )

    def exhausted(self, steps: int, tokens: int, cost_usd: float | None) -> str | None:
        """Which budget the totals so far go past, if any (steps first)."""
        if self.max_steps is not None and steps > self.max_steps:
            return STEPS
        if self.max_tokens is not None and tokens > self.max_tokens:
            return TOKENS
        if self.max_cost_usd is not None and cost_usd is not None and cost_usd > self.max_cost_usd:
            return COST
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "temperature": self.temperature,
        }


def budget_record(budget: Budget, agent: dict[str, Any] | None) -> dict[str, Any]:
    """``settings.budgets`` of a manifest: the budget the attempts ran under, one field per
    kind whatever the agent (the tighter of the harness's and the agent's own cap; null
    where neither caps it), with who enforces each, the harness's and the agent's parts,
    and the temperature."""
    agent = agent or {}
    record: dict[str, Any] = {}
    enforced_by: dict[str, str | None] = {}
    for kind, key in _FIELDS.items():
        harness = getattr(budget, key)
        own = agent.get(_AGENT_KEYS[kind])
        if harness is not None and (own is None or harness <= own):
            record[key], enforced_by[key] = harness, "harness"
        elif own is not None:
            record[key], enforced_by[key] = own, "agent"
        else:
            record[key], enforced_by[key] = None, None
    record |= {
        "temperature": budget.temperature,
        "steps_are": "tool calls (the agent's own cap, where tighter, counts its own unit)",
        "enforced_by": enforced_by,
        "harness": budget.as_dict(),
        "agent": {key: agent.get(_AGENT_KEYS[kind]) for kind, key in _FIELDS.items()},
    }
    if budget.any():
        record["how"] = HOW
    return record
