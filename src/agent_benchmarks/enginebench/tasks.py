"""The engine benchmark's tasks: what every configuration does, and the contract that says
whether an execution did it.

A task is one or more workers, each a sequence of the localweb oracle's abstract steps (go,
read, click, fill, press, wait; :mod:`agent_benchmarks.localweb.oracle`). A script driver
runs each worker in a page (tab) of its own, an MCP stack in a server session of its own,
all at once. What the read steps read gives the answer, computed as the oracle computes it,
and the task's contract (:mod:`agent_benchmarks.scoring.contracts`) checks it against the
answer and the site's own record of the episode (its requests, cart and forms).

- ``localweb:<id>``: a localweb task's oracle and contract, as the agent suites play them.
- ``login``: upstream's ``login_fx`` steps on the site's account area (go to the sign-in
  form, fill the username and the password, press Enter, wait for the sign-out link, go to
  the profile, read the points); the site's record must show the sign-in and the profile
  served to a signed-in visitor.
- ``crawl``: N product pages read by P workers at once (Lightpanda's "100 pages" shape);
  the answer lists every page's SKU and price, and the site must have served every page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.localweb.oracle import (
    ORACLES,
    Answer,
    Fill,
    Follow,
    Go,
    Press,
    Read,
    Step,
    WaitFor,
)
from agent_benchmarks.localweb.site import data
from agent_benchmarks.localweb.tasks import TASKS_BY_ID
from agent_benchmarks.scoring.contracts import AnswerIs, Contract, Requested

LOCALWEB_PREFIX = "localweb:"
# The localweb tasks run when none are named: one of each kind of work, each within reach
# of every script driver (a read, a JavaScript-rendered page, a link followed, a form sent,
# server-side state changed).
DEFAULT_LOCALWEB = ("catalogue-price", "deal-price", "product-warranty", "add-to-cart")
DEFAULT_TASKS = (*(LOCALWEB_PREFIX + t for t in DEFAULT_LOCALWEB), "login", "crawl")


@dataclass(frozen=True)
class EngineTask:
    name: str
    title: str  # what it does, for the report
    workers: tuple[tuple[Step, ...], ...]
    answer: Callable[[list[str]], str | None]  # the reads of every worker, in worker order
    contract: Contract

    @property
    def page_loads(self) -> int:
        """Navigations the steps ask for (a form's submission not counted)."""
        return sum(isinstance(s, (Go, Follow)) for worker in self.workers for s in worker)


def localweb_task(task_id: str) -> EngineTask:
    oracle = ORACLES[task_id]
    task = TASKS_BY_ID[task_id]
    return EngineTask(
        name=LOCALWEB_PREFIX + task_id,
        title=f"localweb {task_id} ({task.group.lower()})",
        workers=(oracle.steps,),
        answer=oracle.answer,
        contract=task.contract,
    )


def login_task() -> EngineTask:
    """upstream's ``login_fx``, step for step, on the site's account area."""
    steps: tuple[Step, ...] = (
        Go("/account/login"),
        Fill("#username", data.ACCOUNT_USERNAME),
        Fill("#password", data.ACCOUNT_PASSWORD),
        Press("#password", "Enter"),
        WaitFor("#logout"),
        Go("/account/profile"),
        Read("#profile"),
    )
    return EngineTask(
        name="login",
        title="sign in, then read the profile (upstream's login_fx steps)",
        workers=(steps,),
        answer=Answer(r"Points\W+(\d+)"),
        contract=Contract(
            (
                AnswerIs((str(data.ACCOUNT_POINTS),)),
                Requested("POST", "/account/login", 303),
                Requested("GET", "/account/profile", 200),
            )
        ),
    )


_FACTS = re.compile(r"(LW-\d{4}).*?(\$\d+\.\d\d)", re.DOTALL)


def _crawl_answer(reads: list[str]) -> str | None:
    """Every page's SKU and price, sorted (the workers' order is theirs)."""
    facts = [_FACTS.search(text) for text in reads]
    if not facts or any(f is None for f in facts):
        return None
    return "; ".join(sorted(f"{f.group(1)} {f.group(2)}" for f in facts if f is not None))


def crawl_task(pages: int, parallel: int) -> EngineTask:
    """``pages`` product pages (the catalogue's, again and again, each visit its own URL),
    dealt round-robin to ``parallel`` workers."""
    if pages < 1 or not 1 <= parallel <= pages:
        raise InputError(f"a crawl needs 1 <= parallel <= pages, got {pages} pages, {parallel}")
    products = [data.PRODUCTS[i % len(data.PRODUCTS)] for i in range(pages)]
    paths = [f"/products/{p.slug}?visit={i}" for i, p in enumerate(products)]
    workers = tuple(
        tuple(step for path in paths[k::parallel] for step in (Go(path), Read("#product-facts")))
        for k in range(parallel)
    )
    expected = "; ".join(sorted(f"{p.sku} {p.price}" for p in products))
    return EngineTask(
        name="crawl",
        title=f"crawl {pages} product pages, {parallel} at a time",
        workers=workers,
        answer=_crawl_answer,
        contract=Contract((AnswerIs((expected,)), *(Requested("GET", p, 200) for p in paths))),
    )


def resolve_tasks(names: list[str], crawl_pages: int, crawl_parallel: int) -> list[EngineTask]:
    """The tasks ``names`` name (``localweb:<id>``, ``login``, ``crawl``); one clear error for
    a name that is none of them."""
    tasks = []
    for name in names:
        if name == "login":
            tasks.append(login_task())
        elif name == "crawl":
            tasks.append(crawl_task(crawl_pages, crawl_parallel))
        elif name.startswith(LOCALWEB_PREFIX) and name[len(LOCALWEB_PREFIX) :] in ORACLES:
            tasks.append(localweb_task(name[len(LOCALWEB_PREFIX) :]))
        else:
            known = ", ".join(LOCALWEB_PREFIX + t for t in ORACLES)
            raise InputError(f"--tasks: no task {name!r} (login, crawl, or one of {known})")
    if len({t.name for t in tasks}) != len(tasks):
        raise InputError("--tasks: a task is named twice")
    return tasks
