"""The Jinja2 environment the HTML pages render in: the report and the run browser.

Autoescaping is on for every template: everything from a run (answers, arguments, URLs,
tool outputs, reasons) is text from the web or from a model, and reaches the page as text.
The only markup not written in a template is the charts' SVG, which matplotlib writes (and
escapes) and a template marks safe. Pages are streamed (``generate``): a report's traces run
to hundreds of megabytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from agent_benchmarks.report import attempts, fmt


@cache
def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agent_benchmarks.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(fmt=fmt, attempts=attempts, refresh=None, crumbs=())
    env.filters["units"] = keep_units
    return env


_UNIT = re.compile(r"(?<=\d) (?=(?:s|ms|MB|KB|GB|tok|tokens|pages|req|pp)\b)")


def keep_units(text: str) -> str:
    """A figure's number and its unit on one line (a no-break space between them): a
    narrow column may wrap a cell between figures, never inside one."""
    return _UNIT.sub("\u00a0", text)


def stream(name: str, **context: Any) -> Iterator[str]:
    """The page in pieces, in order, to be written as they come."""
    return environment().get_template(name).generate(**context)


def render(name: str, **context: Any) -> str:
    return "".join(stream(name, **context))
