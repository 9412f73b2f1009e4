"""What a compared row is: a stack, the agent loop + the browser engine + the model.

Manifests name the backend (``lightpanda-native``, ``claude-mcp/lightpanda``,
``claude-mcp/agent-browser``, ``claude-mcp/agent-browser-lightpanda``,
``claude-mcp/browser-use``, ``claude-mcp/playwright``, ``claude-mcp/chrome-devtools``,
``agent-browser-chat/chrome``); the engine is not always a
separate field, so :func:`engine_of` derives it, and :func:`driven_programs` says which
programs' versions a manifest must pin for that stack.
"""

from __future__ import annotations

from typing import Any

from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.schema import Stack

_ENGINE_ALIASES = {"chrome": "chromium", "google-chrome": "chromium"}
# The browser tools of a backend's name, as manifests key their programs' versions; each
# drives Chromium unless the name ends in -lightpanda.
_TOOL_PROGRAMS = {
    "agent-browser": "agent-browser",
    "browser-use": "browser-use",
    "playwright": "playwright-mcp",
    "chrome-devtools": "chrome-devtools-mcp",
}
_CHROMIUM_TOOLS = tuple(_TOOL_PROGRAMS)
# The agent CLI of each MCP loop, as manifests key its version.
_AGENT_PROGRAMS = {"claude-mcp": "claude-code", "codex-mcp": "codex"}


def engine_of(backend: str, settings: dict[str, Any] | None = None) -> str:
    """The browser engine under a backend.

    1. An explicit ``engine`` in the manifest's backend settings (or settings) wins, for
       backends that record it (agent-browser's chat loop: ``chrome`` or ``lightpanda``);
       ``chrome`` is reported as ``chromium``, the browser it runs here and the name
       manifests pin its version under.
    2. Otherwise the browser part of the name decides (the part after ``/`` for Claude Code
       over MCP, the whole name otherwise): a name ending in ``-lightpanda`` runs on
       Lightpanda (agent-browser's Lightpanda engine); agent-browser, browser-use and the
       Playwright and Chrome DevTools servers otherwise drive Chromium; a name starting with
       ``lightpanda`` is Lightpanda itself.
    3. Anything else is ``unknown``, shown as such rather than guessed.
    """
    settings = settings or {}
    backend_settings = settings.get("backend")
    for source in (backend_settings if isinstance(backend_settings, dict) else {}, settings):
        explicit = source.get("engine")
        if isinstance(explicit, str) and explicit:
            return _ENGINE_ALIASES.get(explicit.lower(), explicit.lower())
    browser = backend.lower().rpartition("/")[2]
    if browser.endswith("-lightpanda") or browser.startswith("lightpanda"):
        return "lightpanda"
    if any(tool in browser for tool in _CHROMIUM_TOOLS):
        return "chromium"
    return "unknown"


def agent_of(backend: str) -> str:
    """The loop that drives the browser: ``claude-mcp`` for Claude Code over MCP,
    ``codex-mcp`` for Codex over MCP, the backend itself for a browser with its own agent
    (``lightpanda-native``)."""
    return backend.partition("/")[0]


def stack_of(run: LoadedRun) -> Stack:
    manifest = run.manifest
    backend = manifest.backend if manifest is not None else run.rows[0].backend
    settings = manifest.settings if manifest is not None else {}
    return Stack(
        backend=backend,
        engine=engine_of(backend, settings),
        model=_model_of(manifest.model, settings) if manifest is not None else _upstream_model(run),
        agent=agent_of(backend),
        surface=surface_of(backend, settings),
        search=search_of(settings),
    )


def search_of(settings: dict[str, Any]) -> str:
    """The run's search (``settings.backend.search_setting``); a run that does not record
    one gave the agent its stack's own search: ``native``. Tavily through Lightpanda's own
    search tool (the native runner: its own request, no result blocking) is not our
    web_search server's search: ``tavily via lightpanda``."""
    backend_settings = settings.get("backend")
    if not isinstance(backend_settings, dict):
        return "native"
    search = backend_settings.get("search_setting")
    if not (isinstance(search, str) and search):
        return "native"
    if search == "tavily" and "search_parameters" not in backend_settings:
        return "tavily via lightpanda"
    return search


def surface_of(backend: str, settings: dict[str, Any]) -> str | None:
    """The tool surface of an agent CLI over MCP (``claude-mcp``, ``codex-mcp``: the
    ``settings.backend.surface``); runs from before the choice existed had what is now
    ``strict``. None for loops of their own."""
    if not agent_of(backend).endswith("-mcp"):
        return None
    backend_settings = settings.get("backend")
    surface = backend_settings.get("surface") if isinstance(backend_settings, dict) else None
    return surface if isinstance(surface, str) and surface else "strict"


def _model_of(model: str | None, settings: dict[str, Any]) -> str | None:
    """The manifest's model, with the id an alias ran as when the run recorded exactly one
    (``sonnet (claude-sonnet-5-5)``), so two runs of one alias over different releases are
    told apart."""
    backend = settings.get("backend")
    if not (model and isinstance(backend, dict) and backend.get("model_is_alias")):
        return model
    if backend.get("model") != model:  # a scripted model answered under the alias
        return model
    resolved = backend.get("resolved_models")
    return (
        f"{model} ({resolved[0]})" if isinstance(resolved, list) and len(resolved) == 1 else model
    )


def _upstream_model(run: LoadedRun) -> str | None:
    """The model an imported run's manifest (upstream's) names, as it named it."""
    model = (run.upstream_manifest or {}).get("agent_model")
    return model if isinstance(model, str) and model else None


def driven_programs(stack: Stack) -> tuple[str, ...]:
    """Names (as ``manifest.programs`` keys them) of the programs a stack runs."""
    programs: list[str] = []
    programs += [_AGENT_PROGRAMS[stack.agent]] if stack.agent in _AGENT_PROGRAMS else []
    name = stack.backend.lower()  # agent-browser may be the loop or the MCP server
    for tool, program in _TOOL_PROGRAMS.items():
        if tool in name:
            programs.append(program)
    if stack.engine in ("lightpanda", "chromium"):
        programs.append(stack.engine)
    return tuple(programs)
