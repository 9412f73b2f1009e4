"""A task's steps as the script drivers take them: a JSON program for the Puppeteer,
Playwright and Playwright-Python drivers (``drivers/``, each an interpreter of it), and a
PandaScript file for ``lightpanda run``, in the form ``lightpanda agent --save`` writes
(``new Page()``, ``await page.goto(...)``, the builtins as the page's methods, ``$LP_*``
placeholders that Lightpanda fills from the environment).

Every driver reads an element as its ``outerHTML`` in the page (the whole document for a
whole-page read), so all of them hand the harness the same thing to turn into the oracle's
reading form (:func:`readings`). A Follow step, which the oracle resolves by a pattern over
what the step before read, runs in the page: the step before's element, with each link
written as ``[text](href)`` (as the markdown reading shows it) or as its HTML for a raw
read, is matched against the same pattern, and the link resolved against the page's URL.

The navigation wait (``load``, ``domcontentloaded``, ``networkidle``) is a parameter, as
upstream's ``waitab.py`` varies it: each driver's own name for it is in ``drivers/``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from agent_benchmarks.enginebench.tasks import EngineTask
from agent_benchmarks.localweb.oracle import (
    Check,
    Click,
    Fill,
    Follow,
    Go,
    Press,
    Read,
    ReadHtml,
    Select,
    Step,
    WaitFor,
    WaitForText,
    html_reading,
    outer_html_script,
    text_check_script,
)

WAITS = ("load", "domcontentloaded", "networkidle")
BASE_PLACEHOLDER = "$LP_BASE_URL"  # PandaScript: filled by lightpanda from the environment
WHOLE_PAGE_SCRIPT = "document.documentElement.outerHTML"


def driver_file(name: str) -> Path:
    """One of the bundled driver programs (``drivers/<name>``)."""
    return Path(str(resources.files(__package__).joinpath("drivers", name)))


def _read_script(step: Read | ReadHtml) -> str:
    return WHOLE_PAGE_SCRIPT if step.selector is None else outer_html_script(step.selector)


def _follow_script(pattern: str, previous: Read | ReadHtml | None) -> str:
    """An expression giving the absolute URL the pattern finds in the previous read's
    element (its links as ``[text](href)``, or its HTML for a raw read), or ``""``."""
    selector = json.dumps(previous.selector if previous is not None else None)
    raw = "true" if isinstance(previous, ReadHtml) else "false"
    return (
        "(() => { const s = " + selector + "; "
        "const e = s ? document.querySelector(s) : document.documentElement; "
        "if (!e) return ''; let text = e.outerHTML; "
        "if (!" + raw + ") { const c = e.cloneNode(true); "
        "for (const a of c.querySelectorAll('a[href]')) "
        "a.replaceWith('[' + a.textContent + '](' + a.getAttribute('href') + ')'); "
        "text = c.textContent; } "
        "const m = new RegExp(" + json.dumps(pattern) + ", 's').exec(text); "
        "return m ? new URL(m[1], location.href).href : ''; })()"
    )


def _operation(step: Step, previous: Read | ReadHtml | None) -> dict[str, Any]:
    match step:
        case Go(path=path):
            return {"op": "go", "path": path}
        case Follow(pattern=pattern):
            return {"op": "follow", "script": _follow_script(pattern, previous)}
        case Read() | ReadHtml():
            return {"op": "read", "script": _read_script(step)}
        case Click(selector=selector):
            return {"op": "click", "selector": selector}
        case Fill(selector=selector, value=value):
            return {"op": "fill", "selector": selector, "value": value}
        case Select(selector=selector, value=value):
            return {"op": "select", "selector": selector, "value": value}
        case Check(selector=selector):
            return {"op": "check", "selector": selector}
        case Press(selector=selector, key=key):
            return {"op": "press", "selector": selector, "key": key}
        case WaitFor(selector=selector):
            return {"op": "wait", "selector": selector}
        case WaitForText(selector=selector, text=text):
            return {"op": "wait_until", "script": text_check_script(selector, text)}
    raise ValueError(f"no script operation for {step!r}")


def _operations(steps: tuple[Step, ...]) -> list[dict[str, Any]]:
    ops, previous = [], None
    for step in steps:
        ops.append(_operation(step, previous))
        if isinstance(step, (Read, ReadHtml)):
            previous = step
    return ops


def program(task: EngineTask, wait: str) -> dict[str, Any]:
    """The JSON program the Puppeteer, Playwright and Playwright-Python drivers run."""
    return {"task": task.name, "wait": wait, "workers": [_operations(w) for w in task.workers]}


def _call(method: str, *args: Any) -> str:
    return f"page.{method}({', '.join(json.dumps(a) for a in args)});"


def _pandascript_line(op: dict[str, Any], wait: str) -> str:
    navigation = f"{{ waitUntil: {json.dumps(wait)} }}"
    match op["op"]:
        case "go":
            return f"await page.goto({json.dumps(BASE_PLACEHOLDER + op['path'])}, {navigation});"
        case "follow":
            return (
                f"{{ const url = page.evaluate({json.dumps(op['script'])}); "
                'if (!url) throw new Error("no link to follow"); '
                f"await page.goto(url, {navigation}); }}"
            )
        case "read":
            return f"reads.push(page.evaluate({json.dumps(op['script'])}));"
        case "click":
            return _call("click", op["selector"])
        case "fill":
            return _call("fill", op["selector"], op["value"])
        case "select":
            return _call("selectOption", op["selector"], op["value"])
        case "check":
            return _call("setChecked", op["selector"], True)
        case "press":
            return _call("press", op["selector"], op["key"])
        case "wait":
            return _call("waitForSelector", op["selector"])
        case "wait_until":
            return _call("waitForScript", op["script"])
    raise ValueError(f"no PandaScript for {op!r}")


def pandascript(task: EngineTask, wait: str) -> str:
    """The task as a PandaScript file: each worker an async function on a page of its own,
    all run at once; the script returns every worker's reads."""
    workers = []
    for ops in program(task, wait)["workers"]:
        body = "\n".join(f"    {_pandascript_line(op, wait)}" for op in ops)
        workers.append(
            "  (async () => {\n    const page = new Page();\n    const reads = [];\n"
            f"{body}\n    return reads;\n  }})(),"
        )
    return (
        f"// {task.name}: {task.title}.\n"
        "// Written by agent-benchmarks engine from the task's steps; run with\n"
        f"// {BASE_PLACEHOLDER} set to the episode's site root.\n"
        "const reads = await Promise.all([\n" + "\n".join(workers) + "\n]);\n"
        "return { reads };\n"
    )


def readings(task: EngineTask, reads: Any) -> list[str]:
    """A script driver's reads (``{"reads": [[html, ...], ...]}``'s list, one per worker) in
    the oracle's reading form, worker after worker; ValueError when they do not fit the
    task's read steps."""
    if not isinstance(reads, list) or len(reads) != len(task.workers):
        raise ValueError(f"expected the reads of {len(task.workers)} worker(s)")
    texts = []
    for steps, got in zip(task.workers, reads, strict=True):
        kinds = [s for s in steps if isinstance(s, (Read, ReadHtml))]
        if not isinstance(got, list):
            raise ValueError(f"a worker's reads are not a list: {got!r:.80}")
        if len(got) != len(kinds):
            raise ValueError(f"a worker read {len(got)} elements, its steps read {len(kinds)}")
        for step, html in zip(kinds, got, strict=True):
            text = str(html)
            texts.append(html_reading(text) if isinstance(step, Read) else text)
    return texts
