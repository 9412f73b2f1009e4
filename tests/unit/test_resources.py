"""What an attempt cost, measured on real processes (isolation/resources.py): memory and CPU
by role against the kernel's own accounting, a timed-out attempt's figures, processes that
drop every trace of the attempt, and the records that carry the figures."""

from __future__ import annotations

import itertools
import json
import os
import resource
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agent_benchmarks.backends.base import with_reply_sizes
from agent_benchmarks.backends.claude_stream import parse_stream
from agent_benchmarks.backends.codex_stream import parse_events
from agent_benchmarks.backends.lightpanda_trace import read_trace
from agent_benchmarks.isolation.process import ProcessSpec, memory_cap_method, run_process
from agent_benchmarks.isolation.resources import (
    CHROMIUM_RULES,
    PSS_SAMPLED,
    RoleRule,
    measurement,
    this_machine,
)
from agent_benchmarks.records.schema import Manifest, PredictionRow, ResourceUse, ToolCall
from tests.fixtures import CLAUDE_CODE, fixture
from tests.support import FIXTURES

MB = 1 << 20
# Each process names its role by an argument of its own (a rule matches its command line).
ROLES = (RoleRule("engine", args=r"\srole-engine$"), RoleRule("agent", args=r"\srole-agent$"))
# The engine: allocates ENGINE_MB and writes every page of it, burns CPU, then starts five
# short children that no sample is likely to see (their time comes back through its own).
ENGINE = textwrap.dedent(
    """
    import subprocess, sys, time
    block = bytearray({mb} << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    began = time.process_time()
    while time.process_time() - began < 0.4:
        pass
    for _ in range(5):
        subprocess.run([sys.executable, "-c", "sum(range(2_000_000))"])
    """
)
AGENT = textwrap.dedent(
    """
    import subprocess, sys, time
    began = time.process_time()
    while time.process_time() - began < 0.2:
        pass
    subprocess.run([sys.executable, "-c", sys.argv[1], "role-" + "engine"])
    """
)
ENGINE_MB = 150


def _spec(tmp: Path, code: str, *args: str, **kw) -> ProcessSpec:
    return ProcessSpec(
        argv=[sys.executable, "-c", code, *args],
        env=dict(os.environ),
        cwd=tmp,
        timeout_s=kw.pop("timeout_s", 60),
        sample_interval_s=kw.pop("sample_interval_s", 0.05),
        roles=kw.pop("roles", ROLES),
        **kw,
    )


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("memory_max_mb", [None, 2000], ids=["uncapped", "capped"])
def test_memory_and_cpu_by_role_match_the_kernels_accounting(
    memory_max_mb: int | None, tmp_path: Path
) -> None:
    before = _cpu_of_children()
    engine_code = ENGINE.format(mb=ENGINE_MB)
    result = run_process(
        _spec(tmp_path, AGENT, engine_code, "role-agent", memory_max_mb=memory_max_mb)
    )
    truth = _cpu_of_children() - before  # every process of the tree was reaped in the tree
    assert result.returncode == 0, result.stderr
    use = result.resources
    assert use is not None
    assert set(use.roles) == {"agent", "engine"}
    engine, agent = use.roles["engine"], use.roles["agent"]
    assert engine.peak_pss_bytes >= ENGINE_MB * MB
    assert agent.peak_pss_bytes < ENGINE_MB * MB / 2
    assert engine.cpu_s >= 0.35 and agent.cpu_s >= 0.15
    # The roles add up to the whole, which is the kernel's (within a few clock ticks).
    assert use.cpu_s == pytest.approx(engine.cpu_s + agent.cpu_s, abs=0.002)
    assert use.cpu_s == pytest.approx(truth, abs=0.06)
    assert use.pss_peak_bytes is not None and use.pss_peak_bytes >= ENGINE_MB * MB
    if memory_max_mb is not None and memory_cap_method() in ("cgroup-v1", "cgroup-v2"):
        assert use.peak_source is not None and use.peak_source.startswith(memory_cap_method())
        assert use.peak_bytes is not None and use.peak_bytes >= ENGINE_MB * MB
    else:
        assert use.peak_source == PSS_SAMPLED and use.peak_bytes == use.pss_peak_bytes
    assert use.samples >= 5 and use.interval_s == 0.05
    assert use.sampler_cpu_s is not None and 0 < use.sampler_cpu_s < use.cpu_s
    assert use.machine == this_machine().kind_id
    assert engine.programs == [Path(sys.executable).resolve().name]


def test_a_timed_out_attempt_keeps_its_figures_up_to_its_end(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import time
        block = bytearray(120 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        began = time.process_time()
        while time.process_time() - began < 0.3:
            pass
        print("waiting", flush=True)
        time.sleep(60)
        """
    )
    result = run_process(_spec(tmp_path, code, "role-agent", timeout_s=2))
    assert result.timed_out
    use = result.resources
    assert use is not None and use.roles["agent"].peak_pss_bytes >= 120 * MB
    assert use.cpu_s is not None and use.cpu_s >= 0.3


def test_a_cancelled_attempt_keeps_its_figures_up_to_its_end(tmp_path: Path) -> None:
    """Killed by the user (the second Ctrl-C): its figures are those of its life."""
    code = textwrap.dedent(
        """
        import time
        block = bytearray(60 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(60)
        """
    )
    cancel = threading.Event()
    threading.Timer(1.5, cancel.set).start()
    result = run_process(_spec(tmp_path, code, "role-agent"), cancel)
    assert result.interrupted
    use = result.resources
    assert use is not None and use.roles["agent"].peak_pss_bytes >= 60 * MB
    assert use.cpu_s is not None and use.cpu_s > 0


def test_a_child_that_drops_the_attempts_environment_is_still_measured(tmp_path: Path) -> None:
    """Without a cgroup an attempt's processes are found by its marker, and by descent from
    them: a program may start its children with an environment of its own."""
    code = textwrap.dedent(
        """
        import subprocess, sys
        child = "b = bytearray(80 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\n" \\
            "import time; time.sleep(1.5)"
        subprocess.run(["env", "-i", sys.executable, "-c", child, "role-engine"])
        """
    )
    result = run_process(_spec(tmp_path, code, "role-agent"))
    assert result.returncode == 0, result.stderr
    use = result.resources
    assert use is not None and use.roles["engine"].peak_pss_bytes >= 80 * MB


def test_unnamed_processes_take_their_parents_role(tmp_path: Path) -> None:
    code = "import subprocess, sys; subprocess.run(['sleep', '0.5'])"
    result = run_process(_spec(tmp_path, code, "role-agent"))
    use = result.resources
    assert use is not None and set(use.roles) == {"agent"}
    assert use.roles["agent"].processes == 2
    assert sorted(use.roles["agent"].programs) == sorted(
        {Path(sys.executable).resolve().name, "sleep"}
    )


def test_no_figures_when_sampling_is_off(tmp_path: Path) -> None:
    result = run_process(_spec(tmp_path, "pass", "role-agent", sample_interval_s=None))
    assert result.returncode == 0 and result.resources is None


def test_chromium_under_any_of_its_names_is_the_engine() -> None:
    def engine(exe: str, cmdline: str) -> bool:
        return any(rule.matches(exe, cmdline) for rule in CHROMIUM_RULES)

    assert engine("chromium", "/proc/self/exe --type=renderer")  # its executable decides
    assert engine("dash", "/bin/sh /usr/bin/chromium --headless")  # Debian's wrapper script
    assert engine("chrome_crashpad_handler", "chrome_crashpad_handler --monitor-self")
    assert not engine("node", "node /x/playwright-mcp --executable-path /usr/bin/chromium")


def test_measurement_names_the_counter_of_the_cap() -> None:
    capped = measurement(0.2, "cgroup-v1")
    assert "memory.max_usage_in_bytes" in capped["attempt_peak"]
    assert "PSS" in measurement(0.2, "no memory cap")["attempt_peak"]
    assert measurement(None, "cgroup-v1")["sampled"] is False


# --- the records ---------------------------------------------------------------------------------


def test_rows_and_manifests_without_figures_are_written_as_before() -> None:
    row = PredictionRow(id="t", suite="gaia", task="q", status="ok", backend="b")
    assert "resources" not in json.loads(row.model_dump_json())
    measured = row.model_copy(update={"resources": ResourceUse(peak_bytes=5, cpu_user_s=1.0)})
    again = PredictionRow.model_validate_json(measured.model_dump_json())
    assert again.resources is not None and again.resources.peak_bytes == 5
    manifest = Manifest.model_validate(
        {
            "suite": "gaia",
            "split": "validation",
            "dataset": {"kind": "bundled"},
            "backend": "b",
            "started_at": "2026-01-01T00:00:00Z",
            "harness_version": "0",
            "mode": "scaffold",
        }
    )
    assert "machine" not in json.loads(manifest.model_dump_json())
    manifest.machine = this_machine()
    assert json.loads(manifest.model_dump_json())["machine"]["cores"] == os.cpu_count()


def test_a_machine_kind_rounds_its_memory() -> None:
    machine = this_machine()
    other = machine.model_copy(update={"memory_bytes": machine.memory_bytes + 1000})
    assert other.kind_id == machine.kind_id
    assert machine.model_copy(update={"cores": machine.cores + 1}).kind_id != machine.kind_id


def test_reply_tokens_are_estimated_only_where_no_count_was_given() -> None:
    calls = [
        ToolCall(name="a", output_chars=10),
        ToolCall(name="b", output_chars=10, output_tokens=7, output_tokens_estimated=False),
        ToolCall(name="c"),
    ]
    a, b, c = with_reply_sizes(calls)
    assert (a.output_tokens, a.output_tokens_estimated) == (3, True)
    assert (b.output_tokens, b.output_tokens_estimated) == (7, False)
    assert c.output_tokens is None


def test_native_reply_tokens_are_the_providers_prompt_growth() -> None:
    """Between two model calls the prompt grows by the model's output and the tool replies
    in between: the replies' tokens are that growth less the output, shared by characters."""
    path = FIXTURES / "lightpanda" / "table" / "trace.jsonl"
    summary = read_trace(path)
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    models = [r["tokens"] for r in records if r["type"] == "model"]
    results = [r["result"] for r in records if r["type"] == "tool"]
    assert [c.output_chars for c in summary.calls] == [len(r) for r in results]
    grown = [
        later["input"] - earlier["input"] - earlier["output"]
        for earlier, later in itertools.pairwise(models)
    ]
    assert [c.output_tokens for c in summary.calls] == grown
    assert all(c.output_tokens_estimated is False for c in summary.calls)


def test_claude_codes_reply_sizes_are_its_streams_tool_results() -> None:
    """Claude Code's stream gives no per-call output count: reply tokens are estimates,
    and the characters are those of each tool_result as the stream recorded it."""
    stream = fixture(CLAUDE_CODE / "lightpanda_mcp" / "stream.jsonl").read_text()
    results = [
        block["content"]
        for event in map(json.loads, stream.splitlines())
        if event.get("type") == "user"
        for block in event["message"]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    texts = [c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c) for c in results]
    calls = with_reply_sizes(parse_stream(stream).calls)
    assert [c.output_chars for c in calls] == [len(t) for t in texts]
    assert all(c.output_tokens_estimated for c in calls)


def test_codexs_reply_sizes_are_its_events_results() -> None:
    stdout = fixture(FIXTURES / "codex" / "browse_and_refuse" / "stdout.jsonl").read_text()
    items = [
        event["item"]
        for event in map(json.loads, stdout.splitlines())
        if event.get("type") == "item.completed" and event["item"].get("type") == "mcp_tool_call"
    ]
    lengths = [
        len("\n".join(p.get("text", "") for p in (item.get("result") or {}).get("content") or []))
        for item in items
    ]
    calls = [c for c in parse_events(stdout).calls if c.name.startswith("mcp__")]
    assert [c.output_chars for c in calls] == lengths and lengths
