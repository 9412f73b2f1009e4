"""Oracle policies for the localweb tasks: what a scripted model does on each task.

Each task's oracle is written once, as abstract browser steps (go to a page, read it, click,
fill, wait), followed by an answer computed from what the browser actually returned. A
:class:`ToolSurface` maps the steps onto one tool vocabulary. The policy never reads the
gold answer: if the engine does not run the page's JavaScript, or the tool surface cannot
reach the content, the answer comes out wrong and the task's contract fails. That is what
makes a scripted run a real test of the browser stack, and makes nothing of the model.

Surfaces: :data:`LIGHTPANDA` (the native agent's tools, which ``lightpanda mcp`` shares;
Claude Code sees them as ``mcp__<server>__<name>`` and the policy resolves that).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urljoin

from agent_benchmarks.localweb.models import Action, Conversation, FinalAnswer, StepPolicy
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
class WaitFor:
    selector: str


@dataclass(frozen=True)
class WaitForText:
    selector: str
    text: str


Step = Go | Follow | Read | ReadHtml | Click | Fill | Select | Check | WaitFor | WaitForText
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


class ToolSurface(Protocol):
    name: str

    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        """The (tool name, arguments) that performs ``step``; ``url`` is resolved for
        navigation steps."""
        ...


class LightpandaSurface:
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
            case WaitFor(selector=selector):
                return "waitForSelector", {"selector": selector}
            case WaitForText(selector=selector, text=text):
                script = (
                    f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent"
                    f"?.includes({json.dumps(text)})"
                )
                return "waitForScript", {"script": script}
        raise ValueError(f"no {self.name} tool for {step!r}")


LIGHTPANDA = LightpandaSurface()


class AgentBrowserSurface:
    """Our agent-browser MCP wrapper (``competitors/agent-browser-mcp``), on either engine.
    A whole-page read is the page's HTML: its links keep their URLs for Follow steps."""

    name = "agent-browser"

    def tool_call(self, step: Step, url: str | None) -> tuple[str, dict[str, Any]]:
        match step:
            case Go() | Follow():
                return "open", {"url": url}
            case Read(selector=None):
                return "get", {"what": "html", "selector": "body"}
            case Read(selector=selector):
                return "get", {"what": "text", "selector": selector}
            case ReadHtml(selector=selector):
                return "get", {"what": "html", "selector": selector}
            case Click(selector=selector):
                return "click", {"selector": selector}
            case Fill(selector=selector, value=value):
                return "fill", {"selector": selector, "text": value}
            case Select(selector=selector, value=value):
                return "select", {"selector": selector, "value": value}
            case Check(selector=selector):
                return "check", {"selector": selector}
            case WaitFor(selector=selector):
                return "wait", {"selector": selector}
            case WaitForText(text=text):
                return "wait", {"text": text}
        raise ValueError(f"no {self.name} tool for {step!r}")


AGENT_BROWSER = AgentBrowserSurface()


# --- the policy ---------------------------------------------------------------------------


class OraclePolicy(StepPolicy):
    """Plays one oracle: step ``i`` on turn ``i`` (one tool call per turn), then answers.

    Deciding from the turn number and the tool results in the conversation (not from
    state kept here) means a client that retries a request gets the same reply again.
    """

    def __init__(self, oracle: Oracle, surface: ToolSurface, site_root: str):
        self.oracle = oracle
        self.surface = surface
        self.site_root = site_root.rstrip("/") + "/"

    def step(self, conv: Conversation) -> Action:
        results = conv.tool_results
        if conv.turn < len(self.oracle.steps):
            step = self.oracle.steps[conv.turn]
            url = None
            if isinstance(step, Go):
                url = urljoin(self.site_root, step.path.lstrip("/"))
            elif isinstance(step, Follow):
                previous = unescape_markdown(results[-1].text if results else "")
                found = re.search(step.pattern, previous)
                if found is None:
                    return FinalAnswer(f"could not find a link matching {step.pattern!r}")
                url = urljoin(self.site_root, found.group(1))
            name, args = self.surface.tool_call(step, url)
            return self.call(conv, name, **args)
        reads = [
            unescape_markdown(result.text)
            for step, result in zip(self.oracle.steps, results, strict=False)
            if isinstance(step, READ_STEPS)
        ]
        answer = self.oracle.answer(reads)
        return FinalAnswer(answer if answer is not None else "not found")


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
        Answer(r"Warranty\s*(\d+ months)"),
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
        (
            Go("/products/lw-1011"),
            Click("#add-button"),
            WaitFor("#added-notice"),
            Read("#cart-link"),
        ),
        Answer(r"Cart \((\d+)\)"),
    ),
    "cart-total": Oracle(
        (
            Go("/products/lw-1004"),
            Click("#add-button"),
            WaitFor("#added-notice"),
            Go("/products/lw-1006"),
            Click("#add-button"),
            WaitFor("#added-notice"),
            Go("/cart"),
            Read("main"),
        ),
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


def oracle_policy(task_id: str, surface: ToolSurface, site_root: str) -> OraclePolicy:
    return OraclePolicy(ORACLES[task_id], surface, site_root)
