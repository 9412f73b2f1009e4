"""The real Lightpanda agent on every localweb task, its model played by the task's oracle.

The oracle computes each answer from what Lightpanda returned, never from the gold, and
the contracts are checked against the site's own record: every task passing here means
the engine ran the page's JavaScript, kept cookies, submitted forms and the tool surface
reached the content.
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import API_KEY, ScriptedModelServer
from agent_benchmarks.localweb.oracle import LIGHTPANDA, ORACLES, oracle_policy, sign_in
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.localweb.tasks import PASSWORD_SLOT, TASKS, TASKS_BY_ID, site_record
from tests.support import lightpanda_binary

pytestmark = pytest.mark.e2e
MODEL = "scripted-oracle"
# A sign-in step that finds the form (each logged-in task's does: no task starts signed in)
# fills the username and the password, presses the button and waits for the page after.
SIGN_IN_CALLS = 4


def _turns(task_id: str) -> int:
    """The model turns the oracle takes: a call per step and the answer, a sign-in's too."""
    steps = ORACLES[task_id].steps
    sign_ins = sum(isinstance(step, type(sign_in()[0])) for step in steps)
    return len(steps) + 1 + SIGN_IN_CALLS * sign_ins


def _agent(task_id: str, question: str, server: ScriptedModelServer, tmp: Path):
    """One real ``lightpanda agent`` run whose model is the scripted server."""
    env = {
        **os.environ,
        "LIGHTPANDA_DISABLE_TELEMETRY": "true",
        "OPENAI_BASE_URL": server.base_url(task_id, "openai"),
        "OPENAI_API_KEY": API_KEY,
    }
    argv = [lightpanda_binary(), "agent", "--provider", "openai_compatible", "--model", MODEL]
    argv += ["--task", question, "--trace", str(tmp / f"{task_id}.trace.jsonl")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90, cwd=tmp)


def _run_task(task_id: str, site: LocalSite, server: ScriptedModelServer, tmp: Path):
    task = TASKS_BY_ID[task_id]
    start = site.begin_task(task_id)
    server.set_policy(task_id, oracle_policy(task_id, LIGHTPANDA, start))
    question = f"Start at {start.rstrip('/')}{task.start_path}. {task.question}"
    # a logged-in task's credentials: the site's account password in the task's slot
    question = question.replace(PASSWORD_SLOT, site.account_password)
    return _agent(task_id, question, server, tmp)


def test_every_oracle_passes_its_contract_on_lightpanda(tmp_path: Path) -> None:
    assert set(ORACLES) == {t.id for t in TASKS}
    with LocalSite() as site, ScriptedModelServer(models=[MODEL]) as server:
        with ThreadPoolExecutor(max_workers=2) as pool:
            procs = dict(
                zip(
                    [t.id for t in TASKS],
                    pool.map(lambda t: _run_task(t.id, site, server, tmp_path), TASKS),
                    strict=True,
                )
            )
        failures = {}
        for task in TASKS:
            proc = procs[task.id]
            answer = proc.stdout.strip()
            results = task.contract.check(answer, site_record(site, task.id))
            failed = [f"{r.clause}: {r.reason}" for r in results if not r.passed]
            if proc.returncode != 0 or failed:
                failures[task.id] = (proc.returncode, answer, failed, proc.stderr[-400:])
            else:
                assert server.usage(task.id).turns == _turns(task.id), task.id
        assert not failures, failures


def test_a_wrong_oracle_fails_the_contract(tmp_path: Path) -> None:
    """Guard against a test that cannot fail: skipping the click leaves the offer hidden,
    so the answer is wrong and the server never saw the consent."""
    from agent_benchmarks.localweb.oracle import Answer, Go, Oracle, OraclePolicy, Read

    task = TASKS_BY_ID["cookie-offer"]
    blind = Oracle((Go("/offers"), Read("#offer")), Answer(r"code (MEMBER-\d+)"))
    with LocalSite() as site, ScriptedModelServer(models=[MODEL]) as server:
        start = site.begin_task(task.id)
        server.set_policy(task.id, OraclePolicy(blind, LIGHTPANDA, start))
        proc = _agent(task.id, task.question, server, tmp_path)
        assert proc.returncode == 0, proc.stderr[-400:]
        assert proc.stdout.strip() == "not found"
        results = task.contract.check(proc.stdout.strip(), site_record(site, task.id))
        assert [r.passed for r in results] == [False, False]
