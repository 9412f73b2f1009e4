"""Oracle policies for the localweb tasks: what a scripted model does on each task.

Each task's oracle is written once, as abstract browser steps (go to a page, read it, click,
fill, wait), followed by an answer computed from what the browser actually returned. A
:class:`ToolSurface` maps the steps onto one tool vocabulary. The policy never reads the
gold answer: if the engine does not run the page's JavaScript, or the tool surface cannot
reach the content, the answer comes out wrong and the task's contract fails. That is what
makes a scripted run a real test of the browser stack, and makes nothing of the model.

Surfaces: :data:`LIGHTPANDA` (the native agent's tools, which ``lightpanda mcp`` shares),
:data:`AGENT_BROWSER` (our agent-browser MCP wrapper), :data:`BROWSER_USE` (browser-use's
MCP server), :data:`PLAYWRIGHT` (Playwright's MCP server) and :data:`CHROME_DEVTOOLS`
(Chrome DevTools' MCP server). Claude Code sees tools as ``mcp__<server>__<name>``; the
policy resolves that.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from markdownify import markdownify

from agent_benchmarks.localweb.models import (
    Action,
    Conversation,
    FinalAnswer,
    StepPolicy,
    ToolResult,
)
from agent_benchmarks.localweb.site import data

# --- steps ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Go:
    path: str  # under the task's site root


@dataclass(frozen=True)
class Follow:
    """Go to the URL captured by ``pattern`` (group 1) in the previous step's output."""

    pattern: str


@dataclass(frozen=True)
class Read:
    selector: str | None = None  # the whole page when None


@dataclass(frozen=True)
class ReadHtml:
    selector: str


@dataclass(frozen=True)
class Click:
    selector: str


@dataclass(frozen=True)
class Fill:
    selector: str
    value: str


@dataclass(frozen=True)
class Select:
    selector: str
    value: str


@dataclass(frozen=True)
class Check:
    selector: str


@dataclass(frozen=True)
class Press:
    """Press ``key`` in the element ``selector`` (Enter in a form's field submits the form).

    Servers whose key tool presses into whatever has the focus (agent-browser, Playwright
    MCP, Chrome DevTools MCP) rely on the step before having filled that element, as the
    engine benchmark's sign-in does; browser-use, which has no key tool, submits the form
    with its submit button instead, as a model on it would."""

    selector: str
    key: str


@dataclass(frozen=True)
class WaitFor:
    selector: str


@dataclass(frozen=True)
class WaitForText:
    selector: str
    text: str


Step = Go | Follow | Read | ReadHtml | Click | Fill | Select | Check | Press | WaitFor | WaitForText
READ_STEPS = (Read, ReadHtml)


def unescape_markdown(text: str) -> str:
    """Markdown renderers escape punctuation (``LW\\-1028``); answers want the plain text."""
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|$])", r"\1", text)


@dataclass(frozen=True)
class Answer:
    """Apply ``pattern`` to the read outputs (joined, unescaped) and fill ``template``."""

    pattern: str
    template: str = "{0}"

    def __call__(self, reads: list[str]) -> str | None:
        match = re.search(self.pattern, "\n".join(reads), re.DOTALL)
        return self.template.format(*match.groups()) if match else None


Compute = Callable[[list[str]], "str | None"]


@dataclass(frozen=True)
class Oracle:
    steps: tuple[Step, ...]
    answer: Answer | Compute


# --- tool surfaces ------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolRequest:
    """The tool call a surface wants made next; ``pause_s`` is how long the model "thinks"
    before asking for it (a poll must give the page time, as a real model's turn does)."""

    name: str
    args: dict[str, Any]
    pause_s: float = 0.0


@dataclass(frozen=True)
class StepDone:
    """The step is complete. ``text`` is what it read in the oracle's reading form: the
    markdown-like text (links as ``[text](url)``, tables as ``| a | b |`` rows, headings as
    ``# title``) that the answer patterns are written against."""

    text: str


Advance = ToolRequest | StepDone


class OracleStuck(Exception):
    """The surface cannot perform a step on what the browser showed (no such element)."""


class LinkMissing(OracleStuck):
    """A :class:`Follow` step found no link matching its pattern in what the step before read."""


class ToolSurface(Protocol):
    name: str

    def advance(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        """The next call for ``step`` given the results of the calls already made for it
        (oldest first), or :class:`StepDone`. ``url`` is resolved for navigation steps.
        A surface may take several calls per step (look an element up, then click it; poll
        until something appears) but finishes every step in a bounded number of calls,
        and raises :class:`OracleStuck` when what the browser returned does not allow it."""
        ...


def html_reading(html: str) -> str:
    """HTML as the markdown-like text the answer patterns expect (the form Lightpanda's
    ``markdown`` tool returns), for surfaces whose reads return HTML."""
    return unescape_markdown(markdownify(html, heading_style="ATX"))


class OneCallSurface(ABC):
    """A surface where each step is one tool call whose result is read as returned."""

    name: str

    @abstractmethod
    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        """The (tool name, arguments) that performs ``step``."""

    def reading(self, step: Step, text: str) -> str:
        """The step's result in the oracle's reading form."""
        return unescape_markdown(text)

    def failed(self, result: ToolResult) -> bool:
        """Whether the call failed (the agent CLI said so, or the tool's text does)."""
        return result.is_error

    def advance(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        if not results:
            return ToolRequest(*self.tool_call(step, url))
        return StepDone(self.reading(step, results[-1].text))


def text_check_script(selector: str, text: str) -> str:
    return (
        f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent"
        f"?.includes({json.dumps(text)})"
    )


def outer_html_script(selector: str) -> str:
    return f"document.querySelector({json.dumps(selector)})?.outerHTML ?? ''"


class LightpandaSurface(OneCallSurface):
    """Lightpanda's tools, as its native agent and ``lightpanda mcp`` offer them."""

    name = "lightpanda"

    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        match step:
            case Go() | Follow():
                return "goto", {"url": url}
            case Read(selector=None):
                return "markdown", {}
            case Read(selector=selector):
                return "markdown", {"selector": selector}
            case ReadHtml(selector=selector):
                return "html", {"selector": selector}
            case Click(selector=selector):
                return "click", {"selector": selector}
            case Fill(selector=selector, value=value):
                return "fill", {"selector": selector, "value": value}
            case Select(selector=selector, value=value):
                return "selectOption", {"selector": selector, "value": value}
            case Check(selector=selector):
                return "setChecked", {"selector": selector, "checked": True}
            case Press(selector=selector, key=key):
                return "press", {"key": key, "selector": selector}
            case WaitFor(selector=selector):
                return "waitForSelector", {"selector": selector}
            case WaitForText(selector=selector, text=text):
                return "waitForScript", {"script": text_check_script(selector, text)}
        raise ValueError(f"no {self.name} tool for {step!r}")

    def failed(self, result: ToolResult) -> bool:
        # The native agent hands a failed tool's text to the model as a result like any
        # other: Lightpanda names its failures (NodeNotFound: ..., FrameNotLoaded: ...).
        return result.is_error or _LIGHTPANDA_FAILURE.match(result.text) is not None


# How Lightpanda 1.0's tools say they failed.
_LIGHTPANDA_FAILURE = re.compile(
    r"\A\s*(?:[A-Z][A-Za-z]*(?:NotFound|NotLoaded|Timeout|Error)|Error):"
)
LIGHTPANDA = LightpandaSurface()


_SNAPSHOT_LINE = re.compile(r'^\s*- (\w+)(?: "((?:[^"\\]|\\.)*)")?(?: \[([^\]]*)\])?:?\s*(.*)$')


def snapshot_reading(snapshot: str) -> str:
    """An accessibility snapshot (``- heading "Specs" [level=1, ref=e4]``) as text: one
    line per named node, headings as ``#`` lines. Enough for the answer patterns, which
    look for phrases and headings; link targets are not in a snapshot."""
    lines = []
    for raw in snapshot.splitlines():
        found = _SNAPSHOT_LINE.match(raw)
        if found is None:
            continue
        role, name, attrs, rest = found.groups()
        text = json.loads(f'"{name}"') if name is not None else rest.strip()
        if not text:
            continue
        level = re.search(r"level=(\d)", attrs or "")
        lines.append(f"{'#' * int(level.group(1))} {text}" if role == "heading" and level else text)
    return "\n".join(lines)


def _select_script(selector: str, value: str) -> str:
    """Choose ``value`` (an option's value or label) in a <select>, as a user would: the
    page sees input and change events."""
    return (
        f"(() => {{ const s = document.querySelector({json.dumps(selector)}); "
        f"const o = [...s.options].find(o => o.value === {json.dumps(value)} "
        f"|| o.label === {json.dumps(value)}); s.value = o.value; "
        "s.dispatchEvent(new Event('input', {bubbles: true})); "
        "s.dispatchEvent(new Event('change', {bubbles: true})); return s.value; })()"
    )


def _agent_browser_data(text: str) -> dict[str, Any]:
    """``data`` of one of agent-browser's JSON replies, which our wrapper returns as they
    are; a failed or unreadable reply makes the step impossible."""
    try:
        # Claude Code may add a line of its own after the tool's text
        reply, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except ValueError:
        raise OracleStuck(f"agent-browser replied with no JSON: {text[:200]!r}") from None
    if not isinstance(reply, dict) or not reply.get("success"):
        error = reply.get("error") if isinstance(reply, dict) else reply
        raise OracleStuck(f"agent-browser failed: {error}")
    data = reply.get("data")
    return data if isinstance(data, dict) else {}


class AgentBrowserSurface:
    """Our agent-browser MCP wrapper (``competitors/agent-browser-mcp``), on either engine,
    with the tools and arguments of upstream's wrapper; every reply is agent-browser's JSON.

    A whole-page read is a ``snapshot`` (the whole tree, the default): agent-browser's
    accessibility tree is what reaches into shadow roots and iframes (``get html``
    serialises neither). A read of one element is its ``outerHTML`` through ``eval``
    (``get html`` returns the inner HTML, which drops the element's own attributes and a
    table's ``<table>``), turned into markdown-like text. The wrapper has no select and no
    check tool: a select is set through ``eval`` (with input and change events), a checkbox
    ticked with ``find first <selector> check``. Its ``wait`` takes a selector or a time
    only, so waiting for text is a poll of an ``eval``, bounded by :attr:`max_polls` and
    paced by :attr:`poll_pause_s`.
    """

    name = "agent-browser"
    max_polls = 40
    poll_pause_s = 0.25

    def advance(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        done = len(results)
        if isinstance(step, WaitForText):
            if done and _agent_browser_data(results[-1].text).get("result") is True:
                return StepDone(results[-1].text)
            if done >= self.max_polls:
                raise OracleStuck(f"{step.text!r} did not appear in {step.selector}")
            script = text_check_script(step.selector, step.text)
            return ToolRequest("eval", {"js": script}, self.poll_pause_s if done else 0.0)
        if done == 0:
            return ToolRequest(*self.tool_call(step, url))
        return StepDone(self.reading(step, results[-1].text))

    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        match step:
            case Go() | Follow():
                return "open", {"url": url}
            case Read(selector=None):
                return "snapshot", {}
            case Read(selector=selector) | ReadHtml(selector=selector):
                return "eval", {"js": outer_html_script(selector)}
            case Click(selector=selector):
                return "click", {"target": selector}
            case Fill(selector=selector, value=value):
                return "fill", {"target": selector, "text": value}
            case Select(selector=selector, value=value):
                return "eval", {"js": _select_script(selector, value)}
            case Check(selector=selector):
                return "find", {"by": "first", "value": selector, "action": "check"}
            case Press(key=key):
                return "press", {"key": key}
            case WaitFor(selector=selector):
                return "wait", {"target": selector}
        raise ValueError(f"no {self.name} tool for {step!r}")

    def reading(self, step: Step, text: str) -> str:
        data = _agent_browser_data(text)
        match step:
            case Read(selector=None):
                return snapshot_reading(str(data.get("snapshot") or ""))
            case Read():
                return html_reading(str(data.get("result") or ""))
            case ReadHtml():
                return str(data.get("result") or "")
        return text


AGENT_BROWSER = AgentBrowserSurface()


def _eval_string(text: str) -> str:
    """The chat's ``eval`` prints a string result as itself; anything else as JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text


class AgentBrowserChatSurface(OneCallSurface):
    """agent-browser's own chat loop (``agent-browser chat``): one tool, ``agent_browser``,
    whose ``command`` is an agent-browser command line. The chat prints a command's useful
    part (a snapshot's tree, ``eval``'s value as JSON unless a string), so a whole-page read
    is a compact snapshot, a read of one element its ``outerHTML`` through ``eval``."""

    name = "agent-browser-chat"
    tool = "agent_browser"

    def failed(self, result: ToolResult) -> bool:
        # agent-browser's CLI prints a failure as a line starting with a cross.
        return result.is_error or result.text.lstrip().startswith("✗")

    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        match step:
            case Go() | Follow():
                words = ["open", str(url)]
            case Read(selector=None):
                words = ["snapshot", "--compact"]
            case Read(selector=selector) | ReadHtml(selector=selector):
                words = ["eval", outer_html_script(selector)]
            case Fill(selector=selector, value=value):
                words = ["fill", selector, value]
            case Select(selector=selector, value=value):
                words = ["select", selector, value]
            case Press(key=key):
                words = ["press", key]
            case WaitForText(text=text):
                words = ["wait", "--text", text]
            case Click(selector=selector) | Check(selector=selector) | WaitFor(selector=selector):
                # by kind, not exact class: a recovery's click is a Click too
                command = next(
                    word
                    for kind, word in ((Click, "click"), (Check, "check"), (WaitFor, "wait"))
                    if isinstance(step, kind)
                )
                words = [command, selector]
            case _:
                raise ValueError(f"no {self.name} tool for {step!r}")
        return self.tool, {"command": " ".join(["agent-browser", *map(_cli_word, words)])}

    def reading(self, step: Step, text: str) -> str:
        match step:
            case Read(selector=None):
                return snapshot_reading(text)
            case Read():
                return html_reading(_eval_string(text))
            case ReadHtml():
                return _eval_string(text)
        return text


def _cli_word(word: str) -> str:
    """``word`` quoted for the chat's command line, which agent-browser splits into words
    the POSIX shell way (quotes, backslashes; no shell runs it). A value that starts with
    ``-`` would be read as one of its options, so it is refused."""
    if word.startswith("-") and not re.match(r"^--?[a-z]+$", word):
        raise ValueError(f"{word!r} would be read as an option")
    return shlex.quote(word)


AGENT_BROWSER_CHAT = AgentBrowserChatSurface()


class AgentBrowserCliSurface(AgentBrowserChatSurface):
    """agent-browser's CLI behind the cli backend's one ``shell`` tool: the same command
    lines as the chat's, whose printed output is the same as the chat shows."""

    name = "agent-browser-cli"
    tool = "shell"


AGENT_BROWSER_CLI = AgentBrowserCliSurface()


class BrowserUseSurface:
    """browser-use's MCP tools (``python -m browser_use.mcp.server``).

    browser-use acts on elements by the index its ``browser_get_state`` lists (tag, text,
    placeholder, href: no id or name), so a step on a CSS selector takes three calls, as it
    would take a model: read the page's HTML to find the element (again, paced and bounded
    like a wait, while the page is still loading without it), read the state, act on the
    matching index. It has no wait tool (a wait is a poll of ``browser_get_html``, bounded
    by :attr:`max_polls` and paced by :attr:`poll_pause_s`, so it does not depend on how
    fast the client turns requests around) and no select tool (a select is typed into, with
    the option's label). Reads return HTML, without shadow roots or iframe documents.
    """

    name = "browser-use"
    max_polls = 20
    poll_pause_s = 0.25

    def advance(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        done = len(results)
        match step:
            case Go() | Follow():
                if done == 0:
                    return ToolRequest("browser_navigate", {"url": url})
                return StepDone(results[-1].text)
            case Read(selector=selector) | ReadHtml(selector=selector):
                if done == 0:
                    return ToolRequest(
                        "browser_get_html", {"selector": selector} if selector else {}
                    )
                text = results[-1].text
                return StepDone(html_reading(text) if isinstance(step, Read) else text)
            case WaitFor(selector=selector) | WaitForText(selector=selector):
                wanted = step.text if isinstance(step, WaitForText) else None
                if done and _has_element(results[-1], wanted):
                    return StepDone(results[-1].text)
                if done >= self.max_polls:
                    raise OracleStuck(f"{selector} did not appear after {done} reads")
                pause = self.poll_pause_s if done else 0.0
                return ToolRequest("browser_get_html", {"selector": selector}, pause)
            case Press(selector=field, key="Enter"):
                return self.advance(Click(f"form:has({field}) [type=submit]"), url, results)
            case (
                Click(selector=selector)
                | Check(selector=selector)
                | Fill(selector=selector)
                | Select(selector=selector)
            ):
                # Read the page until the element is in it: the page the step acts on may
                # still be loading (a navigation returns before it has, through a proxy).
                found = next((i for i, r in enumerate(results) if _holds(r.text, selector)), None)
                if found is None:
                    if done >= self.max_polls:
                        raise OracleStuck(f"no element matches {selector} after {done} reads")
                    pause = self.poll_pause_s if done else 0.0
                    return ToolRequest("browser_get_html", {}, pause)
                if done == found + 1:
                    return ToolRequest("browser_get_state", {})
                if done == found + 2:
                    page, state = results[found].text, results[found + 1].text
                    index, target = _state_index(page, state, selector)
                    match step:
                        case Fill(value=value):
                            return ToolRequest("browser_type", {"index": index, "text": value})
                        case Select(value=value):
                            label = _option_label(target, value)
                            return ToolRequest("browser_type", {"index": index, "text": label})
                    return ToolRequest("browser_click", {"index": index})
                return StepDone(results[-1].text)
        raise ValueError(f"no {self.name} tool for {step!r}")


BROWSER_USE = BrowserUseSurface()


def _holds(page_html: str, selector: str) -> bool:
    return BeautifulSoup(page_html, "html.parser").select_one(selector) is not None


def _has_element(result: ToolResult, text: str | None) -> bool:
    if result.is_error or result.text.startswith("No element found"):
        return False
    return text is None or text in BeautifulSoup(result.text, "html.parser").get_text()


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _state_index(page_html: str, state_json: str, selector: str) -> tuple[int, Tag]:
    """The ``browser_get_state`` index of the element ``selector`` finds in ``page_html``:
    the link with its href, else the one element of its tag with its text, else the one at
    the same position among the elements of its tag (the state lists them in page order)."""
    page = BeautifulSoup(page_html, "html.parser")
    target = page.select_one(selector)
    if target is None:
        raise OracleStuck(f"no element matches {selector}")
    try:
        # raw_decode: Claude Code may append further text blocks after the JSON
        state, _ = json.JSONDecoder().raw_decode(state_json.lstrip())
        elements = state["interactive_elements"]
    except (ValueError, KeyError, TypeError) as exc:
        raise OracleStuck(f"browser_get_state returned no element list: {exc}") from exc
    same_tag = [e for e in elements if e.get("tag") == target.name]
    if target.get("href"):
        for element in same_tag:
            if element.get("href") == target["href"]:
                return element["index"], target
    text = _normalised(target.get_text(" "))
    by_text = [e for e in same_tag if text and _normalised(e.get("text", "")) == text]
    if len(by_text) == 1:
        return by_text[0]["index"], target
    in_page = [
        e
        for e in page.find_all(target.name)
        if not (e.name == "input" and e.get("type") == "hidden")
    ]
    if len(in_page) == len(same_tag):
        return same_tag[in_page.index(target)]["index"], target
    raise OracleStuck(f"cannot tell which browser-use element is {selector}")


def _option_label(select: Tag, value: str) -> str:
    option = select.find("option", attrs={"value": value})
    if option is None:
        raise OracleStuck(f"no option {value!r} in the select")
    return _normalised(option.get_text())


def _exists_script(selector: str) -> str:
    return f"!!document.querySelector({json.dumps(selector)})"


def _wait_script(step: WaitFor | WaitForText) -> str:
    if isinstance(step, WaitForText):
        return text_check_script(step.selector, step.text)
    return _exists_script(step.selector)


class EvaluatingSurface(ABC):
    """A surface that reads elements and polls through a JavaScript-evaluation tool, whose
    reply wraps the script's value (as JSON) in text of the server's own.

    A whole-page read is the server's snapshot; a read of one element its ``outerHTML``; a
    wait is a poll of a script until it returns true, bounded by :attr:`max_polls` and
    paced by :attr:`poll_pause_s` (so it does not depend on how fast the client turns
    requests around)."""

    name: str
    max_polls = 40
    poll_pause_s = 0.25

    @abstractmethod
    def evaluate(self, script: str) -> ToolRequest:
        """The call that evaluates the expression ``script`` in the page."""

    @abstractmethod
    def value(self, result: ToolResult) -> Any:
        """The script's value in an evaluation's reply; :class:`OracleStuck` if none."""

    @abstractmethod
    def snapshot_reading(self, text: str) -> str:
        """A whole-page snapshot's reply in the oracle's reading form."""

    @abstractmethod
    def act(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        """Navigation, whole-page reads and actions on elements."""

    def advance(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        done = len(results)
        match step:
            case WaitFor() | WaitForText():
                if done and self.value(results[-1]) is True:
                    return StepDone(results[-1].text)
                if done >= self.max_polls:
                    raise OracleStuck(f"{step.selector} did not appear after {done} polls")
                request = self.evaluate(_wait_script(step))
                return ToolRequest(request.name, request.args, self.poll_pause_s if done else 0)
            case Read(selector=str(selector)) | ReadHtml(selector=selector):
                if done == 0:
                    return self.evaluate(outer_html_script(selector))
                html = str(self.value(results[-1]) or "")
                return StepDone(html_reading(html) if isinstance(step, Read) else html)
        return self.act(step, url, results)


def _after_heading(text: str, heading: str) -> str | None:
    """The section of a markdown reply under ``### heading`` (up to the next one)."""
    found = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    return found.group(1).strip() if found else None


def _json_value(text: str, where: str) -> Any:
    text = text.strip()
    if text.startswith("```"):
        text = re.sub(r"^```\w*\n|\n?```$", "", text).strip()
    if text == "undefined":
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise OracleStuck(f"{where}: no JSON value in {text[:200]!r}") from None


_PLAYWRIGHT_LINE = re.compile(
    r'^\s*- ([\w/-]+)(?: "((?:[^"\\]|\\.)*)")?((?: \[[^\]]*\])*):?\s*(.*)$'
)


def playwright_snapshot_reading(reply: str) -> str:
    """Playwright MCP's snapshot (a YAML accessibility tree: ``- heading "Specs" [level=1]
    [ref=e4]``, ``- paragraph [ref=e5]: "text"``) as text: one line per named node,
    headings as ``#`` lines; its ``/url`` lines are dropped."""
    lines = []
    for raw in (_after_heading(reply, "Snapshot") or reply).splitlines():
        found = _PLAYWRIGHT_LINE.match(raw)
        if found is None or found.group(1).startswith("/"):
            continue
        role, name, attrs, rest = found.groups()
        rest = rest.strip()
        if rest.startswith('"') and rest.endswith('"'):
            rest = json.loads(rest)
        text = json.loads(f'"{name}"') if name is not None else rest
        if not text:
            continue
        level = re.search(r"\[level=(\d)\]", attrs or "")
        lines.append(f"{'#' * int(level.group(1))} {text}" if role == "heading" and level else text)
    return "\n".join(lines)


class PlaywrightSurface(EvaluatingSurface):
    """Playwright's MCP server (``@playwright/mcp``): its element tools take a snapshot ref
    or a unique selector as ``target`` (the oracle passes its selectors); ``browser_evaluate``
    replies with the value as JSON under ``### Result``. A checkbox is ticked with a click,
    as a model would."""

    name = "playwright"

    def evaluate(self, script: str) -> ToolRequest:
        return ToolRequest("browser_evaluate", {"function": f"() => {script}"})

    def value(self, result: ToolResult) -> Any:
        if result.is_error:
            raise OracleStuck(f"browser_evaluate failed: {result.text[:300]}")
        body = _after_heading(result.text, "Result")
        if body is None:
            raise OracleStuck(f"browser_evaluate replied with no result: {result.text[:200]!r}")
        return _json_value(body, "browser_evaluate")

    def snapshot_reading(self, text: str) -> str:
        return playwright_snapshot_reading(text)

    def act(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        if results:
            if results[-1].is_error:
                raise OracleStuck(f"{type(step).__name__} failed: {results[-1].text[:300]}")
            text = results[-1].text
            return StepDone(self.snapshot_reading(text) if isinstance(step, Read) else text)
        match step:
            case Go() | Follow():
                return ToolRequest("browser_navigate", {"url": url})
            case Read(selector=None):
                return ToolRequest("browser_snapshot", {})
            case Click(selector=selector) | Check(selector=selector):
                return ToolRequest("browser_click", {"target": selector})
            case Fill(selector=selector, value=value):
                return ToolRequest("browser_type", {"target": selector, "text": value})
            case Select(selector=selector, value=value):
                return ToolRequest("browser_select_option", {"target": selector, "values": [value]})
            case Press(key=key):
                return ToolRequest("browser_press_key", {"key": key})
        raise ValueError(f"no {self.name} tool for {step!r}")


PLAYWRIGHT = PlaywrightSurface()


_DEVTOOLS_LINE = re.compile(r'^\s*uid=(\S+)(?: (\w+))?(?: "((?:[^"\\]|\\.)*)")?(.*)$')
# The role Chrome DevTools' snapshot gives each kind of element the oracle acts on.
_DEVTOOLS_ROLES = {
    "a": "link",
    "button": "button",
    "select": "combobox",
    "textarea": "textbox",
    "input:checkbox": "checkbox",
    "input:radio": "radio",
    "input:number": "spinbutton",
    "input:submit": "button",
}


def _devtools_nodes(snapshot: str) -> list[tuple[str, str | None, str, str]]:
    """(uid, role, name, the rest of the line) of each node of a DevTools snapshot."""
    nodes = []
    for raw in snapshot.splitlines():
        found = _DEVTOOLS_LINE.match(raw)
        if found is not None:
            uid, role, name, rest = found.groups()
            nodes.append((uid, role, json.loads(f'"{name}"') if name else "", rest))
    return nodes


def devtools_snapshot_reading(snapshot: str) -> str:
    """A Chrome DevTools snapshot (``uid=1_20 heading "Specs" level="1"``, ``uid=1_23
    "text"``) as text: one line per named node, headings as ``#`` lines."""
    lines = []
    for _, role, name, rest in _devtools_nodes(snapshot):
        if not name:
            continue
        level = re.search(r'level="(\d)"', rest)
        lines.append(f"{'#' * int(level.group(1))} {name}" if role == "heading" and level else name)
    return "\n".join(lines)


def _describe_script(selector: str) -> str:
    """What tells the element apart in an accessibility snapshot: its kind, its accessible
    name as a label, ``aria-label`` or its text gives it, its link, and a select's labels."""
    return (
        f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null; "
        "const label = e.getAttribute('aria-label') || (e.labels && e.labels[0] "
        "&& e.labels[0].textContent) || e.textContent || ''; return {tag: e.localName, "
        "type: e.getAttribute('type') || '', name: label.replace(/\\s+/g, ' ').trim(), "
        "href: e.href || '', options: e.options ? Object.fromEntries([...e.options].map("
        "o => [o.value, o.label])) : {}}; })()"
    )


class ChromeDevToolsSurface(EvaluatingSurface):
    """Chrome DevTools' MCP server (``chrome-devtools-mcp``): every page tool takes the page
    id (``--isolated`` opens one page, id 1, and the oracle opens no other) and acts on
    an element by the ``uid`` its snapshot lists, never by selector. So a step on an element
    takes three calls, as it would take a model: describe the element (kind, accessible
    name, link) with ``evaluate_script``, take a snapshot, act on the node of that role and
    name (and link). ``fill`` also chooses a select's option, by its label."""

    name = "chrome-devtools"
    page_id = 1

    def evaluate(self, script: str) -> ToolRequest:
        return ToolRequest(
            "evaluate_script", {"pageId": self.page_id, "function": f"() => {script}"}
        )

    def value(self, result: ToolResult) -> Any:
        if result.is_error or "returned:" not in result.text:
            raise OracleStuck(f"evaluate_script failed: {result.text[:300]}")
        return _json_value(result.text.split("returned:", 1)[1], "evaluate_script")

    def snapshot_reading(self, text: str) -> str:
        return devtools_snapshot_reading(text)

    def act(self, step: Step, url: str | None, results: Sequence[ToolResult]) -> Advance:
        done, page = len(results), {"pageId": self.page_id}
        if done and results[-1].is_error:
            raise OracleStuck(f"{type(step).__name__} failed: {results[-1].text[:300]}")
        match step:
            case Go() | Follow():
                if done == 0:
                    return ToolRequest("navigate_page", page | {"type": "url", "url": url})
                return StepDone(results[-1].text)
            case Read(selector=None):
                if done == 0:
                    return ToolRequest("take_snapshot", page)
                return StepDone(self.snapshot_reading(results[-1].text))
            case Press(key=key):
                if done == 0:
                    return ToolRequest("press_key", page | {"key": key})
                return StepDone(results[-1].text)
            case (
                Click(selector=selector)
                | Check(selector=selector)
                | Fill(selector=selector)
                | Select(selector=selector)
            ):
                if done == 0:
                    return self.evaluate(_describe_script(selector))
                if done == 1:
                    return ToolRequest("take_snapshot", page)
                if done > 2:
                    return StepDone(results[-1].text)
                element = self.value(results[0])
                if not isinstance(element, dict):
                    raise OracleStuck(f"no element matches {selector}")
                uid = _devtools_uid(results[1].text, element, selector)
                match step:
                    case Fill(value=value):
                        return ToolRequest("fill", page | {"uid": uid, "value": value})
                    case Select(value=value):
                        label = element["options"].get(value)
                        if label is None:
                            raise OracleStuck(f"no option {value!r} in {selector}")
                        return ToolRequest("fill", page | {"uid": uid, "value": label})
                return ToolRequest("click", page | {"uid": uid})
        raise ValueError(f"no {self.name} tool for {step!r}")


def _devtools_uid(snapshot: str, element: dict[str, Any], selector: str) -> str:
    """The uid of the snapshot's node for ``element`` (as :func:`_describe_script` tells
    it): the one of its role and name, and of its link for a link."""
    kind = element["tag"] + (f":{element['type']}" if element["tag"] == "input" else "")
    role = _DEVTOOLS_ROLES.get(kind, "textbox" if element["tag"] == "input" else None)
    href = element.get("href")
    matches = [
        uid
        for uid, node_role, name, rest in _devtools_nodes(snapshot)
        if _normalised(name) == element["name"]
        and (role is None or node_role == role)
        and (not href or f'url="{href}"' in rest)
    ]
    if len(matches) != 1:
        found = "no node" if not matches else f"{len(matches)} nodes"
        raise OracleStuck(f"{found} in the snapshot for {selector} ({element['name']!r})")
    return matches[0]


CHROME_DEVTOOLS = ChromeDevToolsSurface()


# The surface of each browser MCP server (backends/mcp_servers.py's names).
SERVER_SURFACES: dict[str, ToolSurface] = {
    "lightpanda": LIGHTPANDA,
    "agent-browser": AGENT_BROWSER,
    "agent-browser-lightpanda": AGENT_BROWSER,
    "browser-use": BROWSER_USE,
    "playwright": PLAYWRIGHT,
    "chrome-devtools": CHROME_DEVTOOLS,
    "cli-agent-browser": AGENT_BROWSER_CLI,
}


# --- the policy ---------------------------------------------------------------------------
# Codex hands an MCP tool's text to the model after a line of its own ("Wall time: 0.57
# seconds" then "Output:"); the oracle reads the tool's text, as a model would.
_CODEX_PREFIX = re.compile(r"\AWall time: [0-9.]+ seconds\n(?:.*\n)??Output:\n?")


def tool_text(text: str) -> str:
    """A tool's own text, without what the agent CLI put before it."""
    return _CODEX_PREFIX.sub("", text, count=1)


def tool_output(result: ToolResult) -> ToolResult:
    """``result`` with what the agent CLI put before the tool's own text removed."""
    text = tool_text(result.text)
    return result if text == result.text else result.model_copy(update={"text": text})


def play(
    steps: Sequence[Step], surface: ToolSurface, site_root: str
) -> Generator[ToolRequest, ToolResult, list[str]]:
    """Perform ``steps`` on ``surface``: yields each tool call to make (send its result
    back), and returns what the read steps read, in the oracle's reading form. Raises
    :class:`OracleStuck` (:class:`LinkMissing` for a link a Follow step did not find)
    when what the browser returned does not allow a step."""
    root = site_root.rstrip("/") + "/"
    previous = ""  # what the step before read: Follow looks for its link there
    reads: list[str] = []
    for step in steps:
        url = None
        if isinstance(step, Go):
            url = urljoin(root, step.path.lstrip("/"))
        elif isinstance(step, Follow):
            found = re.search(step.pattern, previous)
            if found is None:
                raise LinkMissing(f"could not find a link matching {step.pattern!r}")
            url = urljoin(root, found.group(1))
        own: list[ToolResult] = []
        while not isinstance(decision := surface.advance(step, url, own), StepDone):
            own.append(tool_output((yield decision)))
        previous = decision.text
        if isinstance(step, READ_STEPS):
            reads.append(decision.text)
    return reads


class OraclePolicy(StepPolicy):
    """Plays one oracle: the steps in order, each through as many tool calls as its surface
    needs (one per turn), then the answer.

    It decides by replaying the tool results in the conversation through the steps (not
    from state kept here), so a client that retries a request gets the same reply again.

    With ``recover`` (the runs that inject a fault, and their clean pair), it recovers as a
    real agent could, at most :data:`MAX_RECOVERIES` times: a step whose call failed (the
    tool said so, or its reply did not allow the step) makes it look at the page it is on
    (a consent wall is accepted) and try the step once more (a stale element is looked up
    again); a second failure makes it open the page again from the last navigation, look
    at it, and redo the steps after it. An answer not found in what was read counts as a
    failure of the last read. The recoveries are in the row's calls, not in the answer.
    """

    def __init__(self, oracle: Oracle, surface: ToolSurface, site_root: str, recover: bool = False):
        self.oracle = oracle
        self.surface = surface
        self.site_root = site_root.rstrip("/") + "/"
        self.recover = recover

    def step(self, conv: Conversation) -> Action:
        return _Replay(self, conv).run()


MAX_RECOVERIES = 3
# What the site's consent wall says (localweb/site/interrupt.py): a page that is not the one
# asked for until it is accepted.
_WALL_TEXT = "Before you continue"
_WALL_BUTTON = "#accept-wall"


@dataclass(frozen=True)
class _Glance(Read):
    """A recovery's look at the page: not one of the task's reads."""


@dataclass(frozen=True)
class _AcceptWall(Click):
    """A recovery's click through a consent wall."""


@dataclass(frozen=True)
class _PastWall(WaitFor):
    """A recovery's wait for the page behind the wall."""


@dataclass(frozen=True)
class _Credential(Fill):
    """A recovery's sign-in field (the site sent the agent to its sign-in form)."""


_RECOVERY_STEPS = (_Glance, _AcceptWall, _PastWall, _Credential)
# The site's sign-in form, as a look at the page shows it (localweb/site/account.py).
_SIGN_IN_TEXT = ("Sign in", "Password")
# Where a Fill types the credentials the task's text gives (localweb/tasks.py CREDENTIALS):
# the oracle reads them from the task, as a model would.
USERNAME, PASSWORD = "{username}", "{password}"
_CREDENTIALS = re.compile(r"username (\S+?), password `([^`]+)`")


@dataclass(frozen=True)
class _SignIn(Read):
    """A look at the page the task expects the sign-in form on: if it is there (not when
    the agent is signed in already), the credentials the task gives go into it."""


def sign_in() -> tuple[Step, ...]:
    """Sign in with the credentials the task gives, where the site asks for them."""
    return (_SignIn(),)


def _past_the_wall(text: str) -> list[Step]:
    """What a look at the page calls for before the task goes on: accepting a consent
    wall, or signing in where the site sent the agent to its sign-in form."""
    if _WALL_TEXT in text:
        return [_AcceptWall(_WALL_BUTTON), _PastWall("main")]
    if all(marker in text for marker in _SIGN_IN_TEXT):
        return [
            _Credential("#username", USERNAME),
            _Credential("#password", PASSWORD),
            _AcceptWall("#login-button"),
            _PastWall("main"),
        ]
    return []


class _Replay:
    """One pass of a policy's steps over a conversation's tool results (see OraclePolicy)."""

    def __init__(self, policy: OraclePolicy, conv: Conversation):
        self.policy = policy
        self.conv = conv
        self.results = conv.tool_results
        self.used = 0
        self.plan: list[Step] = list(policy.oracle.steps)
        self.reads: list[str] = []
        self.reads_at: dict[int, int] = {}  # plan position -> len(reads) on reaching it
        self.pages: dict[int, str] = {}  # plan position of a navigation -> its URL
        self.failures: dict[int, int] = {}  # id() of a plan step -> the times it failed
        self.recoveries = 0
        # the task's words: in whichever user message the agent CLI put them (Codex sends
        # its environment first)
        told = "\n".join(m.text for m in conv.messages if m.role == "user")
        found = _CREDENTIALS.search(told)
        self.credentials = {USERNAME: found.group(1), PASSWORD: found.group(2)} if found else {}

    def typed(self, step: Step) -> Step:
        """``step`` with the credentials the task gave in place of their slots."""
        if isinstance(step, Fill) and step.value in self.credentials:
            return replace(step, value=self.credentials[step.value])
        return step

    def next_call(self, step: Step, url: str | None) -> tuple[Action | None, str | None, str]:
        """Run ``step`` over the results: (the call to make now, or None once the step is
        done), the failure that stopped it (or None), and what it read."""
        own: list[ToolResult] = []
        while True:
            try:
                decision = self.policy.surface.advance(step, url, own)
            except OracleStuck as stuck:
                return None, str(stuck), ""
            if isinstance(decision, StepDone):
                return None, None, decision.text
            if self.used == len(self.results):
                time.sleep(decision.pause_s)
                return self.policy.call(self.conv, decision.name, **decision.args), None, ""
            result = tool_output(self.results[self.used])
            self.used += 1
            own.append(result)
            if self.policy.recover and self.failed(step, result):
                return None, result.text[:300], ""

    def failed(self, step: Step, result: ToolResult) -> bool:
        """Whether a call of ``step`` failed. A surface that polls reads a failed poll as
        "not yet" itself; one whose wait is one call fails with it."""
        surface = self.policy.surface
        failed = getattr(surface, "failed", None)
        if not (failed(result) if failed is not None else result.is_error):
            return False
        return isinstance(surface, OneCallSurface) or not isinstance(step, _WAIT_STEPS)

    def enter(self, index: int) -> None:
        """Reaching plan position ``index`` (again): what was read from it on is undone."""
        if index in self.reads_at:
            del self.reads[self.reads_at[index] :]
        self.reads_at = {i: n for i, n in self.reads_at.items() if i < index}
        self.reads_at[index] = len(self.reads)
        self.pages = {i: u for i, u in self.pages.items() if i < index}

    def url_of(self, step: Step, previous: str) -> str | None:
        if isinstance(step, Go):
            return urljoin(self.policy.site_root, step.path.lstrip("/"))
        if isinstance(step, Follow):
            found = re.search(step.pattern, previous)
            return urljoin(self.policy.site_root, found.group(1)) if found else ""
        return None

    def run(self) -> Action:
        policy, plan = self.policy, self.plan
        previous = ""  # what the step before read: Follow looks for its link there
        index = 0
        while True:
            if index == len(plan):
                answer = policy.oracle.answer(self.reads)
                if answer is not None or not self.may_recover():
                    return FinalAnswer(answer if answer is not None else "not found")
                failure, index = "the answer is not in what was read", len(plan) - 1
            else:
                self.enter(index)
                step = self.typed(plan[index])
                url = self.url_of(step, previous)
                if url == "":
                    assert isinstance(step, Follow)
                    return FinalAnswer(f"could not find a link matching {step.pattern!r}")
                action, failure, text = self.next_call(step, url)
                if action is not None:
                    return action
                if failure is None:
                    if url is not None:
                        self.pages[index] = url
                    if isinstance(step, _Glance | _SignIn):
                        plan[index + 1 : index + 1] = self.past_the_wall(index, text)
                    previous = text
                    if isinstance(step, READ_STEPS) and not isinstance(step, _Glance | _SignIn):
                        self.reads.append(text)
                    index += 1
                    continue
                if not self.may_recover():
                    return FinalAnswer(f"stuck: {failure}")
            resumed = self.recover_from(index)
            if resumed is None:
                return FinalAnswer(f"stuck: {failure}")
            index = resumed

    def past_the_wall(self, index: int, text: str) -> list[Step]:
        """The steps a look at the page (at ``index``) calls for. Signed in again in a
        recovery, the agent is back on the page of its last navigation, as it was before
        what it did there: that is done again before the step that failed."""
        steps = _past_the_wall(text)
        if not steps or _WALL_TEXT in text or not isinstance(self.plan[index], _Glance):
            return steps
        nav = max((i for i in self.pages if i < index), default=None)
        if nav is None:
            return steps
        redo = [s for s in self.plan[nav + 1 : index] if not isinstance(s, _RECOVERY_STEPS)]
        return [*steps, *redo]

    def may_recover(self) -> bool:
        return self.policy.recover and self.recoveries < MAX_RECOVERIES

    def recover_from(self, index: int) -> int | None:
        """Where to go on after the step at ``index`` failed (None: nowhere). The first time
        a step fails, the agent looks at the page it is on (a wall is accepted) and tries
        the step again; then it opens the page again from the last navigation, looks at it,
        and redoes what followed."""
        self.recoveries += 1
        step = self.plan[index]
        failed = self.failures.get(id(step), 0)
        self.failures[id(step)] = failed + 1
        if failed == 0 and not isinstance(step, _Glance):
            self.plan.insert(index, _Glance())
            return index
        nav = max((i for i in self.pages if i <= index and i != index), default=None)
        if nav is None:
            return None
        # The earlier recoveries' looks and clicks after it were for a page that is gone.
        rest = [s for s in self.plan[nav + 1 :] if not isinstance(s, _RECOVERY_STEPS)]
        self.plan[nav + 1 :] = [Go(self.pages[nav]), _Glance(), *rest]
        return nav + 1


_WAIT_STEPS = (WaitFor, WaitForText)


# --- the oracles, one per task ---------------------------------------------------------------


def _page_listing(name: str) -> Compute:
    """Which page (1-based, in the order read) lists ``name``."""

    def compute(reads: list[str]) -> str | None:
        for number, text in enumerate(reads, start=1):
            if name in text:
                return str(number)
        return None

    return compute


def _out_of_stock(reads: list[str]) -> str | None:
    for text in reads:
        if "Out of stock" in text:
            heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
            return heading.group(1).strip() if heading else None
    return None


def _cheapest_in(category: str) -> Compute:
    def compute(reads: list[str]) -> str | None:
        rows = re.findall(
            r"^\|\s*LW-\d+\s*\|\s*([^|]+?)\s*\|\s*" + re.escape(category) + r"\s*\|\s*\$([\d.]+)",
            "\n".join(reads),
            re.MULTILINE,
        )
        return min(rows, key=lambda row: float(row[1]))[0] if rows else None

    return compute


def _count_rows_in(category: str) -> Compute:
    def compute(reads: list[str]) -> str | None:
        pattern = r"^\|\s*LW-\d+\s*\|[^|]+\|\s*" + re.escape(category) + r"\s*\|"
        return str(len(re.findall(pattern, "\n".join(reads), re.MULTILINE)))

    return compute


def _link_texts(reads: list[str]) -> str | None:
    texts = re.findall(r"\[([^\]]+)\]\(", "\n".join(reads))
    return ", ".join(texts) if texts else None


def _link_to(name: str) -> str:
    return r"\[" + re.escape(name) + r"\]\(([^)\s]+)\)"


_NEXT_PAGE = r"\[Next page\]\(([^)\s]+)\)"
_KITCHEN = [p for p in data.PRODUCTS if p.category == "Kitchen"]


def _add_one(slug: str) -> tuple[Step, ...]:
    """Put one of a product in the cart from its page.

    The click waits for the product's own SKU first: a browser may answer ``open`` while
    the page before (the previous product, with its "Added" notice) is still the one
    shown, and a click there, or a wait satisfied by the old notice, loses the add.
    """
    return (
        Go(f"/products/{slug}"),
        WaitForText("#sku", slug.upper()),
        Click("#add-button"),
        WaitFor("#added-notice"),
    )


ORACLES: dict[str, Oracle] = {
    "home-links": Oracle((Go("/"), Read("#page-list")), _link_texts),
    "status-errors": Oracle(
        (
            Go("/status"),
            WaitForText("#legacy-status", "HTTP"),
            WaitForText("#inventory-status", "HTTP"),
            ReadHtml("#status-config"),
            Read("#inventory-status"),
            Read("#legacy-status"),
        ),
        Answer(r'data-console-error="(LW-E\d+).*?HTTP (\d+).*?HTTP (\d+)', "{0}; {1}; {2}"),
    ),
    "catalogue-price": Oracle(
        (Go("/catalogue"), Read("table")),
        Answer(r"LW-1024\s*\|[^|]*\|[^|]*\|\s*(\$[\d.]+)"),
    ),
    "catalogue-count": Oracle((Go("/catalogue"), Read("table")), _count_rows_in("Audio")),
    "deal-price": Oracle(
        (Go("/deal"), WaitFor("#deal-price"), Read("#deal")), Answer(r"Deal price (\$[\d.]+)")
    ),
    "deal-stock": Oracle(
        (Go("/deal"), WaitFor("#deal-stock"), Read("#deal")), Answer(r"Units left: (\d+)")
    ),
    "delayed-restock": Oracle(
        (Go("/delayed"), WaitForText("#restock", "Next restock"), Read("#restock")),
        Answer(r"Next restock: (\d+ \w+ \d{4})"),
    ),
    "shadow-battery": Oracle((Go("/specs"), Read()), Answer(r"Battery life: (\d+ hours)")),
    "iframe-pickup": Oracle(
        (Go("/warehouse"), ReadHtml("#warehouse-frame"), Follow(r'src="([^"]+)"'), Read()),
        Answer(r"Pickup point: (Dock \d+)"),
    ),
    "docs-timeout": Oracle(
        (
            Go("/docs"),
            Click('#docs-nav a[href$="/configuration"]'),
            WaitForText("#doc-content", "timeout"),
            Read("#doc-content"),
        ),
        Answer(r"timeout is (\d+ seconds)"),
    ),
    "docs-install": Oracle(
        (Go("/docs/install"), WaitForText("#doc-content", "shopctl"), Read("#doc-content")),
        Answer(r"(shopctl setup --channel \w+)"),
    ),
    "find-product": Oracle(
        (
            Go("/products?page=3"),
            Read("#product-list"),
            Follow(_link_to("Glacier Water Bottle")),
            Read("#product-facts"),
        ),
        Answer(r"\[Glacier Water Bottle\]\(([^)\s]+)\).*?(\$\d+\.\d\d)", "{1} {0}"),
    ),
    "pagination-item": Oracle(
        (
            Go("/products"),
            Read("main"),
            Follow(_NEXT_PAGE),
            Read("main"),
            Follow(_NEXT_PAGE),
            Read("main"),
        ),
        _page_listing("Glacier Water Bottle"),
    ),
    "product-warranty": Oracle(
        (
            Go("/products?page=2"),
            Read("#product-list"),
            Follow(_link_to("Kestrel Binoculars")),
            Read("#product-facts"),
        ),
        Answer(r"Warranty\W*(\d+ months)"),
    ),
    "out-of-stock": Oracle(
        tuple(
            step for product in _KITCHEN for step in (Go(f"/products/{product.slug}"), Read("main"))
        ),
        _out_of_stock,
    ),
    "cheapest-outdoor": Oracle((Go("/catalogue"), Read("table")), _cheapest_in("Outdoor")),
    "cookie-offer": Oracle(
        (Go("/offers"), Click("#accept-cookies"), WaitFor("#offer-text"), Read("#offer")),
        Answer(r"code (MEMBER-\d+)"),
    ),
    "add-to-cart": Oracle(
        (*_add_one("lw-1011"), Read("#cart-link")),
        Answer(r"Cart \((\d+)\)"),
    ),
    "cart-total": Oracle(
        (*_add_one("lw-1004"), *_add_one("lw-1006"), Go("/cart"), Read("main")),
        Answer(r"Total:\s*\**(\$\d+\.\d\d)"),
    ),
    "enquiry-submit": Oracle(
        (
            Go("/enquiry"),
            Fill("#name", "Ada Lovelace"),
            Fill("#email", "ada@example.com"),
            Select("#topic", "bulk-order"),
            Fill("#quantity", "12"),
            Check("#terms"),
            Click("#submit-enquiry"),
            WaitFor("#confirmation"),
            Read("main"),
        ),
        Answer(r"(LW-\d{8})"),
    ),
    "account-orders": Oracle(
        (Go("/account/orders"), *sign_in(), WaitFor("#orders"), Read("#orders")),
        Answer(r"LW-ORD-2718\s*\|[^|]*\|[^|]*\|\s*(\$\d+\.\d\d)"),
    ),
    "account-settings": Oracle(
        (
            Go("/account/settings"),
            *sign_in(),
            WaitFor("#settings-form"),
            Select("#delivery", "locker"),
            Click("#save-settings"),
            WaitFor("#saved"),
            Read("#current-delivery"),
        ),
        Answer(r"([A-Za-z][A-Za-z ]*[a-z])"),
    ),
    "member-checkout": Oracle(
        (
            *_add_one("lw-1004"),
            Go("/account/checkout"),
            *sign_in(),
            WaitFor("#place-order"),
            Click("#place-order"),
            WaitFor("#order-number"),
            Read("#order-confirmation"),
        ),
        Answer(r"(LW-ORD-\d+)"),
    ),
    "docs-returns": Oracle(
        (
            Go("/docs"),
            Click('#docs-nav a[href$="/returns"]'),
            WaitForText("#doc-content", "returned"),
            Read("#doc-content"),
        ),
        Answer(r"within (\d+ days)"),
    ),
}


def oracle_policy(
    task_id: str, surface: ToolSurface, site_root: str, recover: bool = False
) -> OraclePolicy:
    return OraclePolicy(ORACLES[task_id], surface, site_root, recover)
