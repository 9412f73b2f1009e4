"""The site's side of an episode's fault (``--fault``; see
:mod:`agent_benchmarks.episode.faults`): what it does once the fault fires, per episode.

- ``stale-dom``: every page of a faulted run carries the generation of the episode's DOM
  (``data-fault-generation``) and common.js polls ``/__fault/dom``; when the fault bumps
  the generation, the open page replaces its body with a copy (same content, form values
  included: new nodes), reruns its scripts on the copy, and says so (``POST
  /__fault/dom``). :meth:`EpisodeInterrupts.stale_dom` waits for that before the agent
  goes on;
- ``consent-wall``: every page the visitor asks for is a consent wall (``#consent-wall``,
  ``#accept-wall``) until they accept it, which takes them to the page they asked for;
- ``slow-resource``, ``failing-resource``: the next ``count`` requests for the fault's
  path (or any path) are delayed, or answered 503.

The harness's own requests (``/__fault/...``) are kept out of the episode's request log.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from html import escape
from typing import Any

FAULT_PREFIX = "/__fault/"
WALL_COOKIE = "lw_wall"
WALL_ACCEPT = "/__fault/accept-wall"


@dataclass
class Interruption:
    """A site fault that has fired in one episode, and what is left of it."""

    kind: str
    path: str | None = None  # a site path pattern (None: every request)
    remaining: int = 1  # slow and failing resources: responses still to hit
    delay_s: float = 0.0

    def hits(self, site_path: str) -> bool:
        return self.path is None or fnmatch.fnmatchcase(site_path, self.path)


@dataclass
class EpisodeInterrupts:
    """One episode's fault state on the site."""

    generation: int = 0  # the DOM's generation: bumped by a stale-dom fault
    confirmed: int = 0  # the newest generation a page has gone stale for
    interruption: Interruption | None = None
    condition: threading.Condition = field(default_factory=threading.Condition)

    def stale_dom(self, wait_s: float) -> dict[str, Any]:
        """Bump the generation and wait until the open page has replaced its nodes."""
        with self.condition:
            self.generation += 1
            wanted = self.generation
            done = self.condition.wait_for(lambda: self.confirmed >= wanted, timeout=wait_s)
        if not done:
            return {
                "done": False,
                "error": f"no open page of the episode replaced its nodes within {wait_s:g} s",
            }
        return {"done": True, "generation": wanted}

    def confirm(self, generation: int) -> None:
        with self.condition:
            self.confirmed = max(self.confirmed, generation)
            self.condition.notify_all()

    def arm(self, interruption: Interruption) -> dict[str, Any]:
        with self.condition:
            self.interruption = interruption
        return {"done": True, "path": interruption.path or "every request"}

    def take(self, site_path: str, kind: str) -> Interruption | None:
        """The armed interruption of ``kind`` if it hits this request (one response used)."""
        with self.condition:
            armed = self.interruption
            if armed is None or armed.kind != kind or not armed.hits(site_path):
                return None
            if kind in ("slow-resource", "failing-resource"):
                if armed.remaining <= 0:
                    return None
                armed.remaining -= 1
            return armed


def consent_wall(root: str, wanted: str) -> str:
    """The body of the wall shown instead of ``wanted`` (a path under the task's root)."""
    return (
        '<section id="consent-wall" role="dialog" aria-label="Cookie consent">\n'
        "<h1>Before you continue</h1>\n"
        "<p>We use cookies to run this shop. Accept them to continue to the page you "
        "asked for.</p>\n"
        f'<form method="post" action="{root}{WALL_ACCEPT}">\n'
        f'<input type="hidden" name="next" value="{escape(wanted, quote=True)}">\n'
        '<button type="submit" id="accept-wall">Accept and continue</button>\n'
        "</form>\n</section>"
    )
