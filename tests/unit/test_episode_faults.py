"""An episode's fault (episode/faults.py) and the relay that cuts an MCP connection
(episode/mcp_relay.py): triggers, firing once at the right call, what each record says, the
engine found among the attempt's real processes and killed, and the relay cutting, answering
what was in flight and connecting again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.episode.faults import (
    RELAY_LOG,
    EpisodeFault,
    FaultPlan,
    Trigger,
    engine_processes,
    relayed,
    with_descendants,
)
from agent_benchmarks.episode.progress import progress_signal
from agent_benchmarks.isolation.process import MARKER_ENV, attempt_pids
from agent_benchmarks.records.schema import PredictionRow, ToolCall
from agent_benchmarks.runner.plan import plan_attempts


def test_triggers_are_parsed_or_refused_with_the_form_they_take() -> None:
    assert Trigger.parse("call:3") == Trigger(after_call=3)
    assert Trigger.parse("url:/cart*") == Trigger(url_pattern="/cart*")
    assert Trigger.parse("call:3").describe() == "call:3"
    for bad in ("call:0", "call:x", "url:", "when:3", "3"):
        with pytest.raises(InputError, match="--fault-at"):
            Trigger.parse(bad)
    with pytest.raises(InputError, match="the kinds are"):
        FaultPlan("meteor", Trigger(after_call=1))
    with pytest.raises(InputError, match="needs --fault-at"):
        FaultPlan("stale-dom", None)
    assert FaultPlan("none", None).as_dict()["at"] is None


def test_a_site_fault_fires_once_at_its_call_and_says_what_it_did() -> None:
    done: list[str] = []

    def site(kind: str) -> dict[str, Any]:
        done.append(kind)
        return {"done": True, "generation": 1}

    fault = EpisodeFault(FaultPlan("stale-dom", Trigger(after_call=2)), site=site)
    for calls_made in (0, 1):
        fault.before_model_request(calls_made)
    assert done == [] and fault.record()["fired"] is False
    fault.before_model_request(2)
    fault.before_model_request(3)
    assert done == ["stale-dom"]  # once
    record = fault.record()
    assert record["fired"] is True and record["fired_at_call"] == 2
    assert record["action"] == {"done": True, "generation": 1}
    assert record["fired_after_s"] >= 0 and record["tool_calls_seen"] == 3


def test_a_url_trigger_waits_for_the_page_and_a_fault_not_reached_says_why() -> None:
    fault = EpisodeFault(FaultPlan("consent-wall", Trigger(url_pattern="/cart*")), lambda k: {})
    fault.before_model_request(1)
    fault.page_loaded("/products/lw-1004")
    fault.before_model_request(2)
    assert fault.record()["why"] == "no page matching /cart* was loaded"
    fault.page_loaded("/cart?x=1")
    fault.page_loaded("/cart")  # the first matching page is the one recorded
    fault.before_model_request(3)
    record = fault.record()
    assert record["fired_at_call"] == 3 and record["page_loaded"] == "/cart?x=1"
    assert record["loaded_after_call"] == 2
    late = EpisodeFault(FaultPlan("stale-dom", Trigger(after_call=9)), lambda k: {})
    late.before_model_request(4)
    assert "after 4 tool call(s)" in late.record()["why"]


def test_a_fault_whose_action_fails_is_recorded_as_not_fired() -> None:
    def broken(kind: str) -> dict[str, Any]:
        raise RuntimeError("site gone")

    fault = EpisodeFault(FaultPlan("consent-wall", Trigger(after_call=1)), site=broken)
    fault.before_model_request(1)
    record = fault.record()
    assert record["fired"] is False and "site gone" in record["action"]["error"]
    unbound = EpisodeFault(FaultPlan("engine-crash", Trigger(after_call=1)))
    unbound.before_model_request(1)
    assert "not bound" in unbound.record()["action"]["error"]


def _spawn_as(name: str, folder: Path, marker: str, *args: str) -> subprocess.Popen[bytes]:
    """A real process whose program is called ``name`` (a copy of sleep), carrying the
    attempt's marker as an agent's would."""
    home = folder / uuid.uuid4().hex[:8]
    home.mkdir()
    program = home / name
    shutil.copy(shutil.which("sleep") or "/bin/sleep", program)
    env = {**os.environ, MARKER_ENV: marker}
    return subprocess.Popen([str(program), "30", *args], env=env)


def test_an_engine_crash_kills_the_engine_among_the_attempt_s_processes(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    engine = _spawn_as("lightpanda", tmp_path, marker)
    bystander = _spawn_as("node", tmp_path, marker)
    other = _spawn_as("lightpanda", tmp_path, uuid.uuid4().hex)  # another attempt's
    try:
        deadline = time.monotonic() + 5
        while len(attempt_pids(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        fault = EpisodeFault(FaultPlan("engine-crash", Trigger(after_call=1)))
        fault.bind(marker, tmp_path, tmp_path)
        fault.before_model_request(1)
        record = fault.record()
        assert record["fired"] is True
        assert record["action"]["killed"] == [{"pid": engine.pid, "what": "lightpanda 30"}]
        assert engine.wait(timeout=5) == -signal.SIGKILL
        assert bystander.poll() is None and other.poll() is None
    finally:
        for proc in (engine, bystander, other):
            proc.kill()
            proc.wait()


def test_renderers_are_found_below_the_browser_and_a_missing_engine_is_said(
    tmp_path: Path,
) -> None:
    marker = uuid.uuid4().hex
    # a browser whose child starts with a cleared environment and a rewritten title, as
    # Chromium's zygote children do
    script = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.execve('/bin/bash', ['bash', '-c', sys.argv[1]], {})\n"
        "time.sleep(30)\n"
    )
    renderer = "exec -a '/usr/lib/chromium/chromium --type=renderer --lang=en-US' sleep 30"
    browser = subprocess.Popen(
        [sys.executable, "-c", script, renderer], env={**os.environ, MARKER_ENV: marker}
    )
    try:
        deadline = time.monotonic() + 5
        found: list[tuple[int, str]] = []
        while not found and time.monotonic() < deadline:
            found = engine_processes(with_descendants(attempt_pids(marker)), "renderer-crash")
            time.sleep(0.02)
        assert [what for _, what in found] == ["chromium renderer"]
        assert engine_processes(attempt_pids(marker), "renderer-crash") == []  # cleared env
        nothing = EpisodeFault(FaultPlan("engine-crash", Trigger(after_call=1)))
        nothing.bind(marker, tmp_path, tmp_path)
        nothing.before_model_request(1)
        assert nothing.record()["action"]["error"] == "no engine process of the attempt was found"
    finally:
        for pid, _ in found:
            os.kill(pid, signal.SIGKILL)
        browser.kill()
        browser.wait()


ECHO_SERVER = """
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message.get("method") == "initialize":
        result = {"server_pid": os.getpid()}
    elif message["params"].get("hang"):
        continue
    else:
        result = {"echo": message["params"], "server_pid": os.getpid()}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def _send(relay: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert relay.stdin is not None
    relay.stdin.write(json.dumps(message) + "\n")
    relay.stdin.flush()


def _receive(relay: subprocess.Popen[str]) -> dict[str, Any]:
    assert relay.stdout is not None
    return json.loads(relay.stdout.readline())


def test_the_relay_cuts_answers_what_was_in_flight_and_connects_again(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text(ECHO_SERVER)
    entry = relayed({"command": sys.executable, "args": [str(server)], "env": {}}, tmp_path)
    relay = subprocess.Popen(
        [entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        _send(relay, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        first = _receive(relay)["result"]["server_pid"]
        _send(relay, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(relay, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"n": 2}})
        assert _receive(relay)["result"]["echo"] == {"n": 2}
        _send(relay, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"hang": 1}})
        time.sleep(0.3)  # the call is with the server, unanswered
        relay.send_signal(signal.SIGUSR1)
        lost = _receive(relay)
        assert lost["id"] == 3 and "connection to the browser server was lost" in str(lost)
        # the next call reaches a new server, initialized as the first was (its reply to
        # the replayed initialize is not passed on)
        _send(relay, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"n": 4}})
        reply = _receive(relay)
        assert reply["id"] == 4 and reply["result"]["echo"] == {"n": 4}
        assert reply["result"]["server_pid"] != first
        events = [
            json.loads(line)["event"] for line in (tmp_path / RELAY_LOG).read_text().splitlines()
        ]
        assert events == ["cut", "reconnected"]
    finally:
        assert relay.stdin is not None
        relay.stdin.close()
        assert relay.wait(timeout=10) == 0
    # the agent closing its end ends the server quietly: nothing more in the log
    assert "server exited" not in (tmp_path / RELAY_LOG).read_text()


def test_the_relay_ends_with_a_server_that_ends_by_itself(tmp_path: Path) -> None:
    entry = relayed(
        {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}, tmp_path
    )
    relay = subprocess.run(
        [entry["command"], *entry["args"]], input="", capture_output=True, text=True, timeout=10
    )
    # an agent whose server crashed sees it go, as it would without the relay
    assert relay.returncode in (0, 3)
    crashed = subprocess.Popen(
        [entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert crashed.wait(timeout=10) == 3
    assert "server exited" in (tmp_path / RELAY_LOG).read_text()


def test_the_no_progress_signal_reads_repeats_and_pages_from_the_trace() -> None:
    def calls(*specs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
        return [ToolCall(name=name, args=args) for name, args in specs]

    moving = calls(("goto", {"url": "http://s/p"}), ("markdown", {}), ("click", {}))
    signal_ = progress_signal(moving)
    assert signal_["no_progress"] is False and signal_["pages"] == 1
    stuck = calls(
        ("goto", {"url": "http://s/"}), *[("mcp__browser__click", {"selector": "#x"})] * 8
    )
    signal_ = progress_signal(stuck)
    assert signal_["no_progress"] is True and signal_["signals"] == ["repeated_action"]
    assert signal_["repeated_action"] == 8
    wandering = calls(*[("click", {"selector": f"#b{i}"}) for i in range(25)])
    assert progress_signal(wandering)["signals"] == ["no_new_page"]
    cli = calls(("agent_browser", {"command": "agent-browser open 'http://s/a'"}))
    assert progress_signal(cli)["pages"] == 1


def _failed(task_id: str, error_class: str) -> PredictionRow:
    return PredictionRow(
        id=task_id, suite="localweb", task="q", status="error", error_class=error_class,
        backend="lightpanda-native",
    )  # fmt: skip


def test_a_resume_leaves_an_injected_fault_s_failure_settled() -> None:
    injected = _failed("t1", "injected_fault")
    crashed = _failed("t2", "crash")
    plan = plan_attempts(["t1", "t2"], 1, [injected, crashed])
    assert [k.task_id for k in plan.todo] == ["t2"] and plan.settled == 1
