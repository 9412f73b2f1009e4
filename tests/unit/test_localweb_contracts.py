"""Each localweb task's contract passes on a correct episode against the real site and
fails on a wrong or incomplete one; localweb-grade names the failing clauses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from agent_benchmarks.localweb.site import LocalSite, data
from agent_benchmarks.localweb.tasks import GROUPS, TASKS, TASKS_BY_ID, as_tasks, site_record
from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.records.storage import PredictionsWriter
from agent_benchmarks.scoring.contracts import AnswerContains, AnswerIs, normalize_answer
from tests.support import run_cli

# What a browser doing each task right sends to the site, beyond loading the start page.
EPISODES: dict[str, list[tuple[str, str, dict | None]]] = {
    "find-product": [("GET", "/products?page=3", None), ("GET", "/products/lw-1028", None)],
    "pagination-item": [
        ("GET", "/products?page=2", None),
        ("GET", "/products?page=3", None),
    ],
    "product-warranty": [("GET", "/products/lw-1011", None)],
    "cookie-offer": [("POST", "/api/consent", {}), ("GET", "/api/offer", None)],
    "add-to-cart": [("POST", "/cart/add", {"sku": "LW-1011", "qty": "1"})],
    "cart-total": [
        ("POST", "/cart/add", {"sku": "LW-1004", "qty": "1"}),
        ("POST", "/cart/add", {"sku": "LW-1006", "qty": "1"}),
        ("GET", "/cart", None),
    ],
    "enquiry-submit": [
        (
            "POST",
            "/enquiry",
            {
                "name": "Ada Lovelace",
                "email": "ada@example.com",
                "topic": "bulk-order",
                "quantity": "12",
                "terms": "on",
            },
        )
    ],
}


_SIGN_IN = (
    "POST",
    "/account/login",
    {"csrf": "{csrf}", "username": data.ACCOUNT_USERNAME, "password": data.ACCOUNT_PASSWORD},
)
EPISODES |= {
    # the start page sends the visitor to the sign-in form, which comes back after
    "account-orders": [_SIGN_IN, ("GET", "/account/orders", None)],
    "account-settings": [
        _SIGN_IN,
        ("GET", "/account/settings", None),
        ("POST", "/account/settings", {"csrf": "{csrf}", "delivery": "locker"}),
    ],
    "member-checkout": [
        ("POST", "/cart/add", {"sku": "LW-1004", "qty": "1"}),
        ("GET", "/account/login", None),
        _SIGN_IN,
        ("GET", "/account/checkout", None),
        ("POST", "/account/checkout", {"csrf": "{csrf}"}),
    ],
}  # fmt: skip


def _play(site: LocalSite, task_id: str, steps) -> None:
    task = TASKS_BY_ID[task_id]
    base = site.begin_task(task_id).rstrip("/")
    with httpx.Client(follow_redirects=True, timeout=10) as client:
        response = client.get(base + task.start_path)
        assert response.status_code == 200
        for method, path, form in steps:
            if form is not None and form.get("csrf") == "{csrf}":  # the page's own token
                token = re.search(r'name="csrf" value="([0-9a-f]+)"', response.text)
                assert token is not None, (task_id, path)
                form = form | {"csrf": token.group(1)}
            response = client.request(method, base + path, data=form)
            assert response.status_code < 400, (task_id, path, response.status_code)


@pytest.fixture(scope="module")
def site():
    with LocalSite() as running:
        yield running


def test_suite_shape() -> None:
    assert len(TASKS) >= 20
    assert {t.group for t in TASKS} == set(GROUPS)
    assert len({t.id for t in TASKS}) == len(TASKS)
    for task in as_tasks():
        assert task.suite == "localweb" and task.start_url.startswith("/")
        assert "gold" not in task.to_input().model_dump()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_contract_passes_on_a_correct_episode(site: LocalSite, task) -> None:
    _play(site, task.id, EPISODES.get(task.id, []))
    results = task.contract.check(task.gold, site_record(site, task.id))
    assert all(r.passed for r in results), [r for r in results if not r.passed]


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_contract_fails_on_a_wrong_answer(site: LocalSite, task) -> None:
    _play(site, task.id, EPISODES.get(task.id, []))
    record = site_record(site, task.id)
    for wrong in ("", "I could not find it.", "0"):
        results = task.contract.check(wrong, record)
        assert not all(r.passed for r in results), wrong


STATEFUL = [
    t
    for t in TASKS
    if any(not isinstance(c, AnswerIs | AnswerContains) for c in t.contract.clauses)
]


@pytest.mark.parametrize("task", STATEFUL, ids=lambda t: t.id)
def test_right_answer_without_doing_it_fails(site: LocalSite, task) -> None:
    """An incomplete episode: the agent only loads the start page but claims the answer."""
    _play(site, task.id, [])
    results = task.contract.check(task.gold, site_record(site, task.id))
    failed = [r for r in results if not r.passed]
    assert failed and all(
        not isinstance(c, AnswerIs | AnswerContains)
        for c in [task.contract.clauses[results.index(r)] for r in failed]
    )


def test_normalize_answer_forgives_presentation_only() -> None:
    assert normalize_answer(' "**$24.50**". ') == "$24.50"
    assert normalize_answer("14  March\n2027") == "14 march 2027"
    assert normalize_answer("$24.5") != normalize_answer("$24.50")


def _row(task_id: str, prediction: str | None, site: dict | None, status="ok") -> PredictionRow:
    task = TASKS_BY_ID[task_id]
    return PredictionRow(
        id=task_id,
        suite="localweb",
        task=task.question,
        gold=task.gold,
        prediction=prediction,
        status=status,
        backend="lightpanda",
        category=task.group,
        details={} if site is None else {"site": site},
    )


def test_localweb_grade_names_failed_clauses(site: LocalSite, tmp_path: Path) -> None:
    _play(site, "add-to-cart", EPISODES["add-to-cart"])
    done = site_record(site, "add-to-cart").model_dump()
    _play(site, "enquiry-submit", [])  # loaded the form, never submitted it
    not_done = site_record(site, "enquiry-submit").model_dump()
    rows = [
        _row("add-to-cart", "1", done),
        _row("enquiry-submit", TASKS_BY_ID["enquiry-submit"].gold, not_done),
        _row("deal-price", "$34.00", None),
        _row("delayed-restock", None, None, status="timeout"),
    ]
    path = tmp_path / "run" / "predictions.jsonl"
    with PredictionsWriter(path) as writer:
        for row in rows:
            writer.append(row)
    result = run_cli("localweb-grade", str(path), env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    per = {e["id"]: e for e in scores["per_task"]}
    assert per["add-to-cart"]["correct"] is True
    assert per["enquiry-submit"]["correct"] is False
    assert per["enquiry-submit"]["details"]["failed"] == [
        "form arrived with name='Ada Lovelace', email='ada@example.com', "
        "topic='bulk-order', quantity=12"
    ]
    assert per["deal-price"]["details"]["failed"] == ["answer is '$24.50'"]
    assert scores["metrics"]["n_claimed_not_done"] == 1
    assert scores["accuracy_strict"] == 0.25
    assert len(scores["grader"]["contracts_sha256"]) == 64
    assert "no form submission reached the server" in result.stdout
    assert "FAIL" in result.stdout


def test_localweb_grade_refuses_unknown_tasks(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    row = _row("add-to-cart", "1", None).model_copy(update={"id": "no-such-task"})
    path.write_text(row.model_dump_json() + "\n")
    result = run_cli("localweb-grade", str(path))
    assert result.returncode == 2 and "'no-such-task' is not a localweb task" in result.stderr


def test_tasks_command_lists_the_bundled_suite() -> None:
    result = run_cli("agent-benchmarks", "tasks", "localweb", "--json")
    assert result.returncode == 0, result.stderr
    ids = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert ids == [t.id for t in TASKS]
    picked = run_cli("agent-benchmarks", "tasks", "localweb", "--task-ids", "deal-price,nope")
    assert picked.returncode == 2 and "unknown task id 'nope'" in picked.stderr


def test_serve_starts_the_site_alone_with_faults() -> None:
    import signal
    import subprocess
    import sys

    script = Path(sys.executable).parent / "localweb-run"
    proc = subprocess.Popen(
        [str(script), "--serve", "--latency-ms", "5", "--late-modal-ms", "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("localweb serving at http://127.0.0.1:")
        base = first.split(" at ")[1].strip()
        default = proc.stdout.readline().split(": ", 1)[1].strip()
        faults = json.loads(proc.stdout.readline().split(": ", 1)[1])
        assert faults["latency_ms"] == 5 and faults["late_modal_ms"] == 300
        page = httpx.get(default + "catalogue", timeout=10)
        assert page.status_code == 200 and "Xenon Turntable" in page.text
        assert default.startswith(base)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0


def test_bad_fault_flag_is_one_line() -> None:
    result = run_cli("localweb-run", "--serve", "--error-rate", "2")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --error-rate must be between 0 and 1, got 2.0"


def test_serve_refuses_an_episode_fault() -> None:
    result = run_cli("localweb-run", "--serve", "--fault", "stale-dom", "--fault-at", "call:1")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: --fault stale-dom: an episode fault fires inside a run")
