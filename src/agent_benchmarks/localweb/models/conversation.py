"""The neutral view of one model request, and the actions a policy can answer with.

Every wire format (OpenAI chat completions, OpenAI Responses, Anthropic Messages) is parsed
into the same :class:`Conversation`, so a policy is written once and serves Lightpanda,
Claude Code and agent-browser alike. What stays wire-specific is only what a policy should
not care about: ids, content-block shapes, streaming.

Two normalisations matter when reading a conversation:

* System text (OpenAI ``system``/``developer`` messages, Anthropic ``system``, Responses
  ``instructions``) is joined into :attr:`Conversation.system`; ``messages`` holds the rest.
* Tool results always live in ``role="tool"`` messages, one message per batch of results.
  Anthropic puts them inside a user message; that message is split into a tool message
  followed (if it also carried text) by a user message. Each result's ``name`` is resolved
  from the id of the call it answers, which the wire formats do not repeat.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

WireProtocol = Literal["openai_chat", "openai_responses", "anthropic"]
Role = Literal["user", "assistant", "tool"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolSpec(_Frozen):
    """A tool the client offered: its name and input JSON Schema."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    # The Responses API's tool namespace the client offered it in (Codex offers an MCP
    # server's tools as namespace ``mcp__<server>``); ``name`` is then
    # ``<namespace>__<tool>``, the name Claude Code gives the same tool.
    namespace: str | None = None


class ToolUse(_Frozen):
    """A tool call already in the history (made by an earlier reply)."""

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Frozen):
    """What the client's tool returned, as text (non-text parts become placeholders)."""

    id: str
    text: str
    name: str | None = None  # resolved from the matching ToolUse; None if no call matches
    is_error: bool = False


class Message(_Frozen):
    role: Role
    text: str = ""
    tool_calls: list[ToolUse] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)


class Conversation(_Frozen):
    """One model request, wire format stripped.

    ``request_number`` counts the model requests of the task, retries included (1 for the
    first); :attr:`turn` counts the assistant turns in the history. Policies should key off
    ``turn`` and the history, never off ``request_number``: a client that retries after a
    429, a 500 or its own timeout sends the same history again and must get the same answer.
    """

    task_id: str
    protocol: WireProtocol
    request_number: int
    model: str
    stream: bool = False
    max_tokens: int | None = None
    temperature: float | None = None  # as the request set it (None: not set)
    system: str = ""
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)

    @property
    def turn(self) -> int:
        """Assistant turns already taken: 0 on the first request of a task."""
        return sum(1 for m in self.messages if m.role == "assistant")

    @property
    def tool_results(self) -> list[ToolResult]:
        return [r for m in self.messages for r in m.tool_results]

    @property
    def tool_calls(self) -> list[ToolUse]:
        return [c for m in self.messages for c in m.tool_calls]

    @property
    def last_tool_result(self) -> ToolResult | None:
        results = self.tool_results
        return results[-1] if results else None

    @property
    def last_tool_text(self) -> str | None:
        """Text of the most recent tool result, or None before any tool ran."""
        last = self.last_tool_result
        return last.text if last else None

    @property
    def task_text(self) -> str:
        """Text of the first user message: the task, plus whatever the client wrapped it in
        (Claude Code prepends ``<system-reminder>`` blocks to the same message)."""
        for m in self.messages:
            if m.role == "user":
                return m.text
        return ""

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m.role == "user":
                return m.text
        return ""

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def tool_name(self, short: str) -> str | None:
        """The offered tool called ``short``, allowing for MCP prefixes.

        Lightpanda's agent offers ``goto``; Claude Code offers the same tool through MCP as
        ``mcp__<server>__goto``. This returns the exact name first, else the first offered
        name ending in ``__<short>``, else None.
        """
        names = self.tool_names
        if short in names:
            return short
        for name in names:
            if name.endswith(f"__{short}"):
                return name
        return None

    def results_of(self, short: str) -> list[ToolResult]:
        """Results of calls to tool ``short`` (exact name or MCP-prefixed), oldest first."""
        return [
            r
            for r in self.tool_results
            if r.name is not None and (r.name == short or r.name.endswith(f"__{short}"))
        ]

    def unmatched_tool_results(self) -> list[ToolResult]:
        """Results whose id matches no earlier call: a client or wire-format bug."""
        return [r for r in self.tool_results if r.name is None]

    def summary(self) -> dict[str, Any]:
        """A few facts about the request for the request log."""
        last = self.last_tool_result
        return {
            "turn": self.turn,
            "n_messages": len(self.messages),
            "n_tools": len(self.tools),
            "last_role": self.messages[-1].role if self.messages else None,
            "last_tool": last.name if last else None,
            "last_tool_text": (last.text[:200] if last else None),
        }


# --- actions ----------------------------------------------------------------------------------
class Call(_Frozen):
    """One tool call a reply should make."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolCallAction(_Frozen):
    """Reply with one or more tool calls (optionally preceded by some text).

    ``ToolCallAction(name="goto", args={"url": u})`` is shorthand for a single call;
    ``ToolCallAction(calls=[Call(...), Call(...)], text="...")`` makes several at once.
    """

    kind: Literal["tool_calls"] = "tool_calls"
    calls: list[Call]
    text: str = ""

    def __init__(
        self, name: str | None = None, args: dict[str, Any] | None = None, /, **data: Any
    ) -> None:
        # Positional shorthand: ToolCallAction("goto", {"url": u}).
        if name is not None:
            data["name"] = name
            data["args"] = args
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _single_call_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" in data:
            data = dict(data)
            call = Call(name=data.pop("name"), args=data.pop("args", None) or {})
            data["calls"] = [call, *data.get("calls", [])]
        return data

    @model_validator(mode="after")
    def _at_least_one(self) -> ToolCallAction:
        if not self.calls:
            raise ValueError("ToolCallAction needs at least one call")
        return self


class FinalAnswer(_Frozen):
    """Reply with text and no tool call: the agent's answer (``""`` is an empty answer)."""

    kind: Literal["final"] = "final"
    text: str

    def __init__(self, text: str | None = None, /, **data: Any) -> None:
        # Positional shorthand: FinalAnswer("42").
        if text is not None:
            data["text"] = text
        super().__init__(**data)


Action = ToolCallAction | FinalAnswer


def call(name: str, /, **args: Any) -> ToolCallAction:
    """``call("goto", url=u)``: a single-call :class:`ToolCallAction` (no preamble text, so
    every keyword, ``text`` included, is a tool argument)."""
    return ToolCallAction(calls=[Call(name=name, args=args)])
