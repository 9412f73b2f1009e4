"""The package's layers, and the layout page drawn from them and the code.

``LAYERS`` is the one statement of the layering: ``tests/unit/test_import_graph.py`` checks
the imports against it, and :func:`render` draws ``docs/layout.md``'s package list from it
and from each package's and module's own docstring, so the page says what the code says.
``tests/unit/test_docs.py`` fails when the page differs; redraw it with

    uv run python -m tests.layout
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "agent_benchmarks"
PAGE = SRC.parent / "docs" / "layout.md"
START, END = "<!-- layout:start -->", "<!-- layout:end -->"

# From the top down: what each layer holds, by the first name under agent_benchmarks, and
# what it is. A module imports only from its own layer or a lower one.
LAYERS: list[tuple[str, frozenset[str], str]] = [
    ("commands", frozenset({"commands", "__main__"}), "the top: nothing imports it"),
    (
        "reports",
        frozenset({"report", "view"}),
        "what users read: compare, the leak audit, the run browser",
    ),
    (
        "engine benchmark",
        frozenset({"enginebench"}),
        "drives the stacks the suites' runs drive, on localweb's site and tasks, and claims "
        "its folder as a run does: above both",
    ),
    (
        "suites",
        frozenset({"gaia", "assistantbench", "webbench", "localweb"}),
        "one package each: its registration, run.py, grade.py and all that is the suite's; "
        "no suite imports another",
    ),
    ("runner", frozenset({"runner"}), "the run command, the run engine, sweeps"),
    (
        "backends",
        frozenset({"backends", "web", "search"}),
        "the stacks behind one interface, and the offline world their agents are given: "
        "the recorded web, the search stand-in",
    ),
    (
        "episode",
        frozenset({"episode"}),
        "the harness's hand inside an episode (the model meter, faults)",
    ),
    (
        "scoring",
        frozenset({"scoring"}),
        "what several suites' grading shares, and the grade command",
    ),
    ("isolation", frozenset({"isolation"}), "nothing of an attempt survives it"),
    (
        "run spec",
        frozenset({"spec"}),
        "what a run is before it runs: the spec and its flags, the suite registry, datasets, "
        "prompts",
    ),
    (
        "records",
        frozenset({"records"}),
        "what a run writes and reads: rows, manifests, scores, the predictions file",
    ),
    (
        "common",
        frozenset({"common", "__init__"}),
        "errors, the environment, redaction, loopback addresses; the package's version",
    ),
]


def summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line ("" without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _entries(name: str) -> list[str]:
    base = SRC / ROOT / name
    if base.is_dir():
        lines = [f"- `{name}/`: {summary(base / '__init__.py')}".rstrip(": ")]
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(base)
            if path.name == "__init__.py" and path.parent == base:
                continue
            shown = relative.parent if path.name == "__init__.py" else relative
            suffix = "/" if path.name == "__init__.py" else ""
            lines.append(f"  - `{shown}{suffix}`: {summary(path)}".rstrip(": "))
        return lines
    return [f"- `{name}.py`: {summary(base.with_suffix('.py'))}".rstrip(": ")]


def render() -> str:
    """The package list, layer by layer from the top."""
    out = []
    for title, names, what in LAYERS:
        out.append(f"### {title}\n\n{what[0].upper()}{what[1:]}.\n")
        for name in sorted(names, key=lambda n: (n.startswith("_"), n)):
            out.extend(_entries(name))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def page_with(text: str) -> str:
    page = PAGE.read_text()
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{text}{END}{tail}"


if __name__ == "__main__":
    PAGE.write_text(page_with(render()))
    sys.exit(0)
