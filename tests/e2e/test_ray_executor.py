"""``--executor ray`` on a real multi-node Ray cluster on this machine.

``ray.cluster_utils.Cluster`` starts a head (no CPUs: it schedules nothing) and worker nodes,
each its own raylet with its own worker processes; the runs are the real ``localweb-run``
console script (the driver, a separate process that connects to the cluster by address)
with the real ``lightpanda agent`` and the scripted oracle. Each node is given one CPU, so
two workers put attempts on two nodes at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.runner.ray_node import STAGING_PREFIX
from tests.support import REPO, run_cli, run_processes

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

# Before ray is imported: its uv hook would upload this folder to every worker.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
from ray.cluster_utils import Cluster  # noqa: E402  (a locked dependency: never skipped)

ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}


@contextmanager
def _cluster(*nodes: dict, head: dict | None = None):
    """A head that runs nothing and one raylet per entry of ``nodes`` (its add_node
    arguments), their session files in a temp folder of their own, removed after. Each
    node's workers have a temp folder of their own in it too (``cluster.node_temp``), where
    their attempts' staging folders are: what a test finds there is its own cluster's."""
    temp_dir = tempfile.mkdtemp(prefix="ab-ray-test-")
    # Ray keeps its sessions and the cluster's address under $RAY_TMPDIR/ray; the drivers
    # the tests start inherit it, and find the cluster's files there.
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp_dir
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "include_dashboard": False, **(head or {})},
        )
        # Short, as the system's: the agents' socket paths are under it.
        cluster.node_temp = Path(tempfile.mkdtemp(prefix="n"))
        try:
            # The worker nodes in the order given (the cluster keeps them in a set).
            cluster.added = [_add_node(cluster, **node) for node in nodes]
            cluster.wait_for_nodes()
            yield cluster
        finally:
            cluster.shutdown()
            shutil.rmtree(cluster.node_temp, ignore_errors=True)
    finally:
        if before is None:
            del os.environ["RAY_TMPDIR"]
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(temp_dir, ignore_errors=True)


def _add_node(cluster, **node):
    """A worker node of ``cluster`` whose workers' temp folder is the cluster's own."""
    env = {**node.pop("env_vars", {}), "TMPDIR": str(cluster.node_temp)}
    return cluster.add_node(env_vars=env, **node)


@pytest.fixture(scope="module")
def cluster():
    with _cluster({"num_cpus": 1}, {"num_cpus": 1}) as cluster:
        yield cluster


def _rows(run_dir: Path) -> list[PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


def _staging_left(cluster) -> list[str]:
    """The staging folders the nodes of ``cluster`` still hold."""
    return sorted(str(p) for p in cluster.node_temp.glob(f"{STAGING_PREFIX}*"))


def _attempt_processes(*run_dirs: Path) -> list[str]:
    """Processes of these runs' attempts still alive (their marker starts with the run's
    key, on a node as here)."""
    return [" ".join(p.cmdline())[:120] for p in run_processes(*run_dirs)]


def _site(text: str | None) -> str | None:
    # Each run serves its site on its own port: answers that quote a URL differ only there.
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text) if text else text


def _graded(run_dir: Path) -> dict:
    scores = json.loads((run_dir / "scores.json").read_text())
    return {
        "summary": {k: v for k, v in scores.items() if k.startswith(("accuracy", "n_"))},
        "tasks": sorted(
            (t["id"], t["attempt"], t["status"], t["correct"], _site(t["prediction"]))
            for t in scores["per_task"]
        ),
    }


@pytest.mark.timeout(1300)  # covers the commands it runs (their timeouts)
def test_a_ray_run_gives_the_rows_and_scores_a_local_run_gives(cluster, tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    done = run_cli("localweb-run", "--workers", "2", "--out-dir", str(local), env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    done = run_cli(
        "localweb-run",
        "--workers",
        "2",
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        "--out-dir",
        str(on_ray),
        env=ENV,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    def answers(run_dir: Path) -> list[tuple]:
        rows = _rows(run_dir)
        return sorted((r.id, r.attempt, r.status, _site(r.prediction), r.error_class) for r in rows)

    assert answers(on_ray) == answers(local)
    assert len(answers(local)) == 24
    assert _graded(on_ray) == _graded(local)
    assert _graded(on_ray)["summary"]["accuracy_strict"] == 1.0

    # Each row names its node; both nodes ran attempts; each attempt's files came back.
    rows = _rows(on_ray)
    nodes = Counter(row.details["node"] for row in rows)
    assert len(nodes) == 2, nodes
    for row in rows:
        folder = on_ray / "attempts" / f"{row.id}.1.1"
        assert (folder / "trace.jsonl").stat().st_size > 0, folder
    manifest = json.loads((on_ray / "manifest.json").read_text())
    (executor,) = manifest["settings"]["executors"]
    assert executor["kind"] == "ray" and executor["address"] == cluster.address
    working = [n for n in executor["nodes"] if n["cpus"]]
    assert len(working) == 2
    assert {f"{n['hostname']}/{n['id']}" for n in working} == set(nodes)
    lightpanda = manifest["programs"]["lightpanda"]
    assert all(n["programs"]["lightpanda"] == lightpanda for n in working)
    assert manifest["spec"]["executor"]["kind"] == "ray"
    assert not _staging_left(cluster)
    assert not _attempt_processes(local, on_ray)


@pytest.mark.timeout(1300)  # covers the two commands it runs (their timeouts)
@pytest.mark.parametrize(
    "command",
    [
        ("localweb-ab-run", "--engine", "lightpanda"),
        ("localweb-mcp-run", "--backend", "agent-browser"),
    ],
    ids=["chat-lightpanda", "mcp-agent-browser"],
)
def test_the_other_runners_give_the_same_rows_on_ray(cluster, tmp_path, command):
    # Their attempts' files hold the driver's paths (Claude Code's MCP config, the chat
    # attempt's config): the node runs them from its own staging folder all the same.
    runs = {}
    for name, extra in (
        ("local", ()),
        ("ray", ("--executor", "ray", "--ray-address", cluster.address)),
    ):
        runs[name] = tmp_path / name
        done = run_cli(
            *command, "--limit", "4", "--workers", "2", *extra, "--out-dir", str(runs[name]),
            env=ENV, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]

    def answers(run_dir: Path) -> list[tuple]:
        rows = _rows(run_dir)
        return sorted((r.id, r.status, _site(r.prediction), len(r.trace)) for r in rows)

    assert answers(runs["ray"]) == answers(runs["local"])
    assert all(status == "ok" for _, status, _, _ in answers(runs["ray"]))
    assert _graded(runs["ray"]) == _graded(runs["local"])
    assert not _staging_left(cluster)
    assert not _attempt_processes(*runs.values())


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _node_running_an_attempt(cluster):
    """The worker node whose Ray worker runs an attempt now: found from the attempt's guard
    process (a child of that worker), whose grandparent is the node's raylet."""
    raylets = {node.all_processes["raylet"][0].process.pid: node for node in cluster.worker_nodes}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "reap(sys.argv[2])" not in " ".join(proc.info["cmdline"] or []):
                continue
            worker_pid = int(proc.info["cmdline"][4])  # the guard's argv: the worker's pid
            raylet = psutil.Process(worker_pid).ppid()
        except (psutil.NoSuchProcess, psutil.AccessDenied, IndexError, ValueError):
            continue
        if raylet in raylets:
            return raylets[raylet]
    return None


def _start_slow_ray_run(cluster, run_dir: Path, limit: int) -> subprocess.Popen[bytes]:
    """``localweb-run`` on the cluster in the background, its pages slowed so that attempts
    are still running when a test loses a node or interrupts the driver."""
    argv = [
        str(Path(sys.executable).parent / "localweb-run"),
        *("--workers", "2", "--limit", str(limit), "--latency-ms", "700"),
        *("--executor", "ray", "--ray-address", cluster.address, "--out-dir", str(run_dir)),
    ]
    return subprocess.Popen(
        argv, cwd=REPO, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.timeout(1300)  # covers the commands it runs (their timeouts)
def test_a_lost_node_gives_infrastructure_rows_and_a_clean_resume(cluster, tmp_path):
    run_dir = tmp_path / "run"
    driver = _start_slow_ray_run(cluster, run_dir, limit=6)
    try:
        _wait_for(lambda: len(_staging_left(cluster)) >= 2, 120, "two attempts on the nodes")
        time.sleep(1.0)
        victim = _wait_for(lambda: _node_running_an_attempt(cluster), 30, "a busy node")
        cluster.remove_node(victim)  # its raylet and workers, killed
        _add_node(cluster, num_cpus=1)  # the other tests' second node
        _, err = driver.communicate(timeout=600)
    finally:
        driver.kill()
    assert driver.returncode == 0, err.decode()[-3000:]
    rows = _rows(run_dir)
    lost = [r for r in rows if r.error_class == "node_lost"]
    assert lost, [(r.id, r.status, r.error_class) for r in rows]
    for row in lost:
        assert row.status == "error" and row.is_infra_failure
        assert row.error.startswith(("NodeDiedError", "WorkerCrashedError")), row.error
        # The row names the node it was lost with, as an ok row names the node it ran on.
        assert row.details["node"].endswith(f"/{victim.node_id[:12]}"), row.details
    assert len(rows) == 6  # every attempt has its row; none doubled
    # Nothing of the lost attempts survives: the guard killed them and removed their folders.
    _wait_for(
        lambda: not _attempt_processes(run_dir) and not _staging_left(cluster), 30, "clean-up"
    )
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["n_errors"] == {"node_lost": len(lost)}

    resumed = run_cli(
        "localweb-run",
        "--resume",
        str(run_dir),
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        env=ENV,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    rows = _rows(run_dir)
    assert len(rows) == 6 + len(lost)  # the lost attempts once more, nothing else
    last = {}
    for row in rows:
        last[(row.id, row.attempt)] = row
    assert len(last) == 6
    assert all(row.status == "ok" for row in last.values())
    assert {r.id for r in rows[6:]} == {r.id for r in lost}
    assert all(r.details["try"] == 2 for r in rows[6:])
    assert json.loads((run_dir / "scores.json").read_text())["accuracy_strict"] == 1.0


def _sigkill_node(node) -> None:
    """A node's raylet and its workers killed outright, as a crashed machine goes: Ray is
    told nothing, and lists the node as alive for a while yet."""
    raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
    for proc in [raylet, *raylet.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_a_resume_right_after_a_node_and_the_harness_were_killed_runs_on_the_others(tmp_path):
    with _cluster({"num_cpus": 1}, {"num_cpus": 1}) as cluster:
        run_dir = tmp_path / "run"
        driver = _start_slow_ray_run(cluster, run_dir, limit=4)
        try:
            _wait_for(lambda: len(_staging_left(cluster)) >= 2, 120, "two attempts on the nodes")
            victim = cluster.added[1]
            driver.kill()  # the harness, killed outright with its attempts running
            _sigkill_node(victim)
            killed_at = time.monotonic()
            before = (run_dir / "predictions.jsonl").read_text().count("\n")
            resumed = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "localweb-run"), "--resume", str(run_dir),
                    "--executor", "ray", "--ray-address", cluster.address,
                ],
                cwd=REPO, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            started_within = time.monotonic() - killed_at
            _, err = resumed.communicate(timeout=600)
        finally:
            driver.kill()
            driver.wait()
        assert started_within < 1.0
        assert resumed.returncode == 0, err.decode()[-3000:]
        rows = _rows(run_dir)
        last = {(r.id, r.attempt): r for r in rows}
        assert len(last) == 4 and all(r.status == "ok" for r in last.values()), rows
        # The dead node was left out, named with why; the resume ran on the other one.
        manifest = json.loads((run_dir / "manifest.json").read_text())
        (left_out,) = [n for n in manifest["settings"]["executors"][-1]["nodes"] if "left_out" in n]
        assert left_out["id"] == victim.node_id[:12]
        assert "TaskUnschedulableError" in left_out["left_out"], left_out
        warned = [line for line in err.decode().splitlines() if "left out node" in line]
        assert len(warned) == 1 and victim.node_id[:12] in warned[0], err.decode()[-3000:]
        alive = cluster.added[0].node_id[:12]
        assert all(r.details["node"].endswith(f"/{alive}") for r in rows[before:])
        # Nothing of the killed harness's attempts is left on the surviving node either.
        _wait_for(
            lambda: not _attempt_processes(run_dir) and not _staging_left(cluster), 30, "clean-up"
        )


def test_a_cluster_bound_to_loopback_is_reachable_by_its_loopback_address(tmp_path):
    # Ray connects to 127.0.0.1:PORT by this machine's own address, which a cluster bound
    # to loopback does not answer on: the driver waited without end.
    loopback = {"node_ip_address": "127.0.0.1"}
    with _cluster({"num_cpus": 1, **loopback}, head=loopback) as cluster:
        port = cluster.address.rsplit(":", 1)[1]
        run_dir = tmp_path / "run"
        done = run_cli(
            "localweb-run", "--limit", "2", "--executor", "ray",
            "--ray-address", f"127.0.0.1:{port}", "--out-dir", str(run_dir), env=ENV, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r.status for r in _rows(run_dir)] == ["ok"] * 2
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (node,) = [n for n in manifest["settings"]["executors"][0]["nodes"] if n["cpus"]]
    assert node["address"] == "127.0.0.1"


@pytest.mark.timeout(800)  # covers the commands it runs (their timeouts)
def test_an_interrupted_ray_run_cancels_its_tasks_and_resumes_locally(cluster, tmp_path):
    run_dir = tmp_path / "run"
    driver = _start_slow_ray_run(cluster, run_dir, limit=4)
    try:
        _wait_for(lambda: len(_staging_left(cluster)) >= 2, 120, "two attempts on the nodes")
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=120)
    finally:
        driver.kill()
    assert driver.returncode == 130, err.decode()[-3000:]
    rows = _rows(run_dir)
    assert rows and all(r.status == "error" for r in rows), [(r.id, r.status) for r in rows]
    assert {r.error_class for r in rows} == {"interrupted"}
    _wait_for(
        lambda: not _attempt_processes(run_dir) and not _staging_left(cluster), 30, "clean-up"
    )

    # The same run, resumed on this machine's pool: the executor is not part of the run.
    resumed = run_cli("localweb-run", "--resume", str(run_dir), env=ENV, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    rows = _rows(run_dir)
    last = {(r.id, r.attempt): r for r in rows}
    assert len(last) == 4 and all(r.status == "ok" for r in last.values())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [e["kind"] for e in manifest["settings"]["executors"]] == ["ray", "local"]


def _flavoured_programs() -> dict[str, str]:
    # Stands for a backend's program check: what this node's "lightpanda" is.
    return {"lightpanda": os.environ.get("NODE_FLAVOUR", "1.0.2")}


def test_a_node_with_other_program_versions_is_refused_by_name(tmp_path):
    from agent_benchmarks.common.errors import InputError
    from agent_benchmarks.runner.ray_executor import RayExecutor

    with _cluster(
        {"num_cpus": 1, "env_vars": {"NODE_FLAVOUR": "1.0.2"}},
        {"num_cpus": 1, "env_vars": {"NODE_FLAVOUR": "0.9.9"}},
    ) as cluster:
        odd = cluster.added[1]
        with (
            RayExecutor(2, address=cluster.address) as executor,
            pytest.raises(InputError) as refused,
        ):
            executor.check_programs({"lightpanda": "1.0.2"}, _flavoured_programs)
    message = str(refused.value)
    assert "lightpanda is 0.9.9, here 1.0.2" in message
    assert message.count("lightpanda is") == 1  # the matching node is not named
    assert "nothing was run" in message
    assert odd.node_id[:12] in message  # the odd node, named by its id


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_a_ray_started_for_the_run_runs_it_and_leaves_nothing(tmp_path, request):
    run_dir = tmp_path / "run"
    # The driver's temp folder is this test's (short: Ray's socket paths must stay under
    # 108 bytes), where the Ray it starts keeps its session files and its workers stage.
    temp = Path(tempfile.mkdtemp(prefix="r"))
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    env = {**ENV, "RAY_ADDRESS": "", "RAY_TMPDIR": "", "TMPDIR": str(temp)}
    done = run_cli(
        "localweb-run", "--limit", "3", "--executor", "ray", "--out-dir", str(run_dir), env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r.status for r in _rows(run_dir)] == ["ok"] * 3
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["executors"][0]["address"] == "local (started for the run)"
    assert not list(temp.iterdir())
    assert not _attempt_processes(run_dir)


SWEEP = """
executor = "ray"
ray_address = "{address}"
workers = 2
out_dir = "{out}"

[grid]
suite = "localweb"
stack = ["native", "mcp:lightpanda"]
model = ["scripted", "scripted:oracle-b"]

[settings]
limit = 3
latency_ms = 300
"""


def _sweep(path: Path, *extra: str, env: dict[str, str] | None = None):
    return run_cli("agent-benchmarks", "sweep", str(path), *extra, env=env or ENV, timeout=900)


@pytest.mark.timeout(3000)  # covers the commands it runs (their timeouts)
def test_a_sweep_runs_is_interrupted_and_completes_without_repeating_a_cell(cluster, tmp_path):
    out = tmp_path / "sweep"
    path = tmp_path / "stacks.toml"
    path.write_text(SWEEP.format(address=cluster.address, out=out))
    cells = [
        out / "localweb" / stack / model
        for stack in ("native", "mcp-lightpanda")
        for model in ("scripted", "scripted-oracle-b")
    ]
    driver = subprocess.Popen(
        [str(Path(sys.executable).parent / "agent-benchmarks"), "sweep", str(path)],
        cwd=REPO,
        env={**os.environ, **ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def a_cell_has_all_its_rows() -> bool:
        files = [c / "predictions.jsonl" for c in cells if (c / "predictions.jsonl").exists()]
        return any(len(f.read_text().splitlines()) == 3 for f in files)

    try:
        _wait_for(a_cell_has_all_its_rows, 300, "a cell's rows")
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=300)
    finally:
        driver.kill()
    assert driver.returncode == 130, err.decode()[-3000:]
    assert "continue it with: agent-benchmarks sweep" in err.decode()
    listing = _sweep(path, "--list")
    states = [line.split("]")[0].strip("[") for line in listing.stdout.splitlines() if "]" in line]
    assert "done" in states and set(states) - {"done"}, listing.stdout
    done_before = {
        c: (c / "predictions.jsonl").read_bytes()
        for c, s in zip(cells, states, strict=True)
        if s == "done"
    }

    again = _sweep(path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(done_before)} done, {4 - len(done_before)} to run" in again.stderr
    for cell in cells:
        rows = _rows(cell)
        settled = {(r.id, r.attempt) for r in rows if r.status == "ok"}
        assert len(settled) == 3, (cell, [(r.id, r.status, r.error_class) for r in rows])
        # Exactly once: an attempt has at most one settled row, its others were interrupted.
        assert len([r for r in rows if r.status == "ok"]) == 3
        assert all(r.error_class == "interrupted" for r in rows if r.status != "ok")
        manifest = json.loads((cell / "manifest.json").read_text())
        assert manifest["spec"]["executor"]["kind"] == "ray"
    for cell, before in done_before.items():
        assert (cell / "predictions.jsonl").read_bytes() == before  # not run again
        assert len(json.loads((cell / "manifest.json").read_text())["sessions"]) == 1
    compared = (out / "compare.md").read_text()
    for number in ("#1", "#2", "#3", "#4"):
        assert f"| {number} |" in compared
    assert "claude-mcp/lightpanda" in compared and "lightpanda-native" in compared
    record = json.loads((out / "sweep.json").read_text())
    assert [c["out_dir"] for c in record["cells"]] == [str(c) for c in cells]

    # Once more: nothing left to run, the compare is made again.
    third = _sweep(path)
    assert third.returncode == 0 and "4 done, 0 to run" in third.stderr


def test_a_cell_that_cannot_start_stops_the_sweep_before_any_cell_runs(tmp_path):
    out = tmp_path / "sweep"
    path = tmp_path / "keys.toml"
    path.write_text(
        f'out_dir = "{out}"\n[grid]\nsuite = "localweb"\nstack = "native"\n'
        'model = ["scripted", "anthropic/claude-sonnet-4-5"]\n[settings]\nlimit = 2\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "agent-benchmarks"), "sweep", str(path)],
        cwd=REPO,
        env={**env, **ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "1 cell(s) of the sweep cannot start; nothing was run" in done.stderr
    assert "cell localweb · native · anthropic/claude-sonnet-4-5:" in done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr
    assert not out.exists()  # no cell folder, no sweep.json


def test_a_node_on_another_address_reaches_the_runs_services_on_the_drivers(tmp_path):
    # A worker node on another address (127.0.0.2: still this machine, but not the
    # driver's): the site and the scripted model listen on the driver's own address, which
    # the node's agents reach, instead of 127.0.0.1.
    with _cluster({"num_cpus": 2, "node_ip_address": "127.0.0.2"}) as cluster:
        run_dir = tmp_path / "run"
        done = run_cli(
            "localweb-run", "--limit", "3", "--workers", "2", "--executor", "ray",
            "--ray-address", cluster.address, "--out-dir", str(run_dir), env=ENV,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    host = manifest["spec"]["executor"]["service_host"]
    assert host not in ("127.0.0.1", "127.0.0.2"), host
    nodes = manifest["settings"]["executors"][0]["nodes"]
    assert [n["address"] for n in nodes if n["cpus"]] == ["127.0.0.2"]
    rows = _rows(run_dir)
    assert [r.status for r in rows] == ["ok"] * 3
    assert all(r.details["start_url"].startswith(f"http://{host}:") for r in rows)


def test_a_ray_address_nothing_answers_on_is_one_error_naming_it(tmp_path):
    # Ray itself would wait for such a cluster without end.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"  # bound, never listening
        run_dir = tmp_path / "run"
        named = run_cli(
            "localweb-run", "--executor", "ray", "--ray-address", address,
            "--out-dir", str(run_dir), env=ENV, timeout=60,
        )  # fmt: skip
        from_env = run_cli(
            "localweb-run", "--executor", "ray", "--out-dir", str(run_dir),
            env={**ENV, "RAY_ADDRESS": address}, timeout=60,
        )  # fmt: skip
    assert named.returncode == 2
    assert named.stderr.strip() == (
        f"error: --ray-address {address}: no Ray cluster answers there (Connection refused)"
    )
    assert from_env.returncode == 2
    assert f"error: RAY_ADDRESS={address}: no Ray cluster answers there" in from_env.stderr
    assert not run_dir.exists()


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_the_scaling_benchmark_runs_the_same_attempts_on_each_node_count():
    # benchmarks/ray_scaling.py measures what this executor exists for: it must keep
    # running (its figures are in agent-benchmarks.md), whatever its numbers.
    done = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "ray_scaling.py"), "--nodes", "1,2",
            "--cpus-per-node", "1", "--attempts", "4", "--wait-s", "0.2", "--no-local",
        ],
        cwd=REPO, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ray, 1 node(s):" in done.stderr and "ray, 2 node(s):" in done.stderr
    assert "4 attempts of a stand-in agent that waits 0.2 s" in " ".join(done.stderr.split())
