"""Ray executor scaling: the same attempts on 1, 2 and 4 nodes of a Ray cluster.

    uv run python benchmarks/ray_scaling.py [--nodes 1,2,4] [--cpus-per-node 4]
                                            [--attempts 128] [--wait-s 1.0] [--rounds 1]
                                            [--no-local]

A ``ray.cluster_utils.Cluster`` (a head that runs nothing, and N worker nodes, each its own
raylet with ``--cpus-per-node`` CPUs: one attempt per CPU) runs the real ``gaia-run
--executor ray`` on ``--attempts`` GAIA-schema tasks, ``--workers`` N x CPUs per node. The
agent is a stand-in (``--lightpanda`` a shell script) that waits ``--wait-s`` and answers,
computing nothing: an LLM's latency, not this machine's two cores, is what an attempt's
time is made of, so what the figures show is the executor. Each node count runs in a
cluster of its own; the local executor runs the same attempts with the same workers beside
them (``--no-local`` skips it).

Per line, from the run's manifest (its engine loop):

* /s = attempts / wall; ``x1`` is that over N times the one-node figure (1.00: linear;
  the target is at least 0.90);
* steady: attempts/s from the first wave's end to the last row (each Ray worker's
  start-up, once per worker per run, left out), and ``st. x1`` its scaling;
* ms st. = workers / steady - wait, in ms: the time each attempt takes beside its
  agent's wait in steady state (the driver's preparation and reading, packing its folder,
  Ray's scheduling, the node's staging and guard, the way back);
* ms all = (busy - agent) / attempts: the same over the whole run (the workers' start-up
  included: the first attempts wait for it);
* CPU ms: the CPU time of the command and the cluster over the run (the driver,
  Ray's daemons and workers, the guards, the stand-ins), divided by the attempts.

It prints figures, not pass/fail; it exits non-zero only if a run failed (an exit status
other than 0, or a row that is not ``ok``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # before ray is imported

import psutil
from overhead import write_dataset  # N GAIA rows with no attachment
from rich import box
from rich.console import Console
from rich.table import Table

from agent_benchmarks.records.schema import Manifest, PredictionRow

REPO = Path(__file__).resolve().parents[1]
ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}


def counts(value: str) -> list[int]:
    found = [int(part) for part in value.split(",") if part.strip()]
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: a comma-separated list of counts >= 1")
    return found


def write_stand_in(path: Path, wait_s: float) -> Path:
    """A ``--lightpanda`` that answers ``version`` and, as the agent, waits and answers."""
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = version ] && {{ echo "stand-in agent (waits {wait_s} s)"; exit 0; }}\n'
        f"sleep {wait_s}\necho 1\n"
    )
    path.chmod(0o755)
    return path


def tree_cpu_s() -> float:
    """CPU time this process's descendants used (the cluster's daemons and workers, the
    command, what they started), those that are gone included as their parents reaped
    them: the machine's own figure would count other work on it."""
    total = os.times().children_user + os.times().children_system
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def _read_progress(stream, seen: list[float]) -> None:
    """When each row's progress line arrived (monotonic), in order."""
    for line in stream:
        if line.startswith("["):
            seen.append(time.monotonic())


@dataclass
class Result:
    executor: str
    nodes: int
    workers: int
    attempts: int
    ok: int
    wall: float
    busy: float
    agent: float
    cpu: float
    steady: float  # attempts/s after the first wave (workers' start-up left out)

    @property
    def rate(self) -> float:
        return self.attempts / self.wall if self.wall else float("nan")

    def per_attempt_ms(self, seconds: float) -> float:
        return 1000 * seconds / self.attempts


def run_once(
    argv: list[str], out_dir: Path, env: dict[str, str], label: tuple[str, int, int], tasks: int
) -> Result:
    cpu_before = tree_cpu_s()
    proc = subprocess.Popen(
        [*argv, "--out-dir", str(out_dir)],
        cwd=REPO,
        env={**os.environ, **ENV, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[float] = []
    assert proc.stderr is not None
    _read_progress(proc.stderr, seen)
    returncode = proc.wait()
    cpu = tree_cpu_s() - cpu_before
    lines = (out_dir / "predictions.jsonl").read_text().splitlines() if out_dir.exists() else []
    rows = [PredictionRow.model_validate_json(line) for line in lines]
    ok = sum(1 for row in rows if row.status == "ok")
    if returncode != 0 or ok != tasks:
        raise SystemExit(f"{label}: exit {returncode}, {ok}/{tasks} rows ok")
    session = Manifest.model_validate_json((out_dir / "manifest.json").read_text()).sessions[-1]
    executor, nodes, workers = label
    first = min(workers, len(seen)) - 1  # the first wave's last row (0-based)
    steady = (len(seen) - 1 - first) / (seen[-1] - seen[first]) if len(seen) > first + 1 else 0
    return Result(
        executor,
        nodes,
        workers,
        len(rows),
        ok,
        session.wall_seconds or float("nan"),
        session.busy_seconds or float("nan"),
        session.agent_seconds or float("nan"),
        cpu,
        steady,
    )


def on_cluster(nodes: int, cpus: int, run) -> Result:
    """``run(address, node_env)`` with a cluster of ``nodes`` nodes of ``cpus`` CPUs up."""
    from ray.cluster_utils import Cluster

    ray_tmp = Path(tempfile.mkdtemp(prefix="ab-rs-"))  # short: Ray's socket paths
    node_temp = ray_tmp / "n"  # the nodes' temp folder: their attempts' staging folders
    node_temp.mkdir()
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = str(ray_tmp)
    try:
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
        )
        try:
            for _ in range(nodes):
                cluster.add_node(num_cpus=cpus, env_vars={"TMPDIR": str(node_temp)})
            cluster.wait_for_nodes()
            return run(cluster.address, {"RAY_TMPDIR": str(ray_tmp)})
        finally:
            cluster.shutdown()
    finally:
        if before is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(ray_tmp, ignore_errors=True)


def report(console: Console, results: list[Result], args: argparse.Namespace) -> None:
    title = (
        f"{args.attempts} attempts of a stand-in agent that waits {args.wait_s} s, "
        f"{args.cpus_per_node} per node at once (medians of {args.rounds} round(s))"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in (
        "",
        "nodes",
        "workers",
        "/s",
        "x1",
        "steady",
        "st. x1",
        "ms st.",
        "ms all",
        "CPU ms",
    ):
        table.add_column(name, justify="right", min_width=len(name))
    one = next((r for r in results if r.executor == "ray" and r.nodes == 1), None)
    for r in results:
        ray = one is not None and r.executor == "ray"
        scaled = r.rate / (r.nodes * one.rate) if ray else None
        steady = r.steady / (r.nodes * one.steady) if ray and one.steady else None
        # In steady state each slot ends an attempt every workers/steady seconds: what is
        # not the agent's wait is the executor's.
        steady_ms = 1000 * (r.workers / r.steady - args.wait_s) if r.steady else float("nan")
        table.add_row(
            r.executor,
            str(r.nodes) if r.executor == "ray" else "-",
            str(r.workers),
            f"{r.rate:.2f}",
            f"{scaled:.2f}" if scaled is not None else "-",
            f"{r.steady:.2f}",
            f"{steady:.2f}" if steady is not None else "-",
            f"{steady_ms:.0f}",
            f"{r.per_attempt_ms(r.busy - r.agent):.0f}",
            f"{r.per_attempt_ms(r.cpu):.0f}",
        )
    console.print(table)
    console.print(
        "/s: attempts/s over the whole run; steady: attempts/s after the first wave (each "
        "Ray worker's start-up left out); x1, st. x1: over N times one node's (target >= "
        "0.90); ms st., ms all: the executor's time per attempt beside the agent's wait "
        "(steady; over the run); CPU ms: the command's and the cluster's CPU per attempt"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=counts, default=[1, 2, 4])
    parser.add_argument("--cpus-per-node", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=128)
    parser.add_argument("--wait-s", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-local", action="store_true", help="skip the local executor")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="ab-rs-work-"))
    try:
        dataset = write_dataset(work / "tasks.jsonl", args.attempts)
        stand_in = write_stand_in(work / "agent", args.wait_s)
        base = [
            str(Path(sys.executable).parent / "gaia-run"),
            *("--dataset-file", str(dataset), "--level", "all", "--lightpanda", str(stand_in)),
            *("--provider", "openai_compatible", "--model", "stand-in"),
            *("--base-url", "http://127.0.0.1:9/v1", "--scaffold", "--no-grade"),
            *("--no-empty-retry", "--timeout", "120"),
        ]
        env = {"OPENAI_API_KEY": "stand-in"}
        results = []
        for nodes in args.nodes:
            workers = nodes * args.cpus_per_node
            rounds = []
            for i in range(args.rounds):
                out = work / f"ray-{nodes}-{i}"

                def run(address, node_env, out=out, workers=workers, nodes=nodes):
                    argv = [*base, "--workers", str(workers), "--executor", "ray"]
                    argv += ["--ray-address", address]
                    label = ("ray", nodes, workers)
                    return run_once(argv, out, {**env, **node_env}, label, args.attempts)

                rounds.append(on_cluster(nodes, args.cpus_per_node, run))
                console.print(f"ray, {nodes} node(s): {rounds[-1].rate:.2f} attempts/s")
            results.append(_median(rounds))
            if not args.no_local:
                rounds = []
                for i in range(args.rounds):
                    out = work / f"local-{workers}-{i}"
                    argv = [*base, "--workers", str(workers)]
                    rounds.append(run_once(argv, out, env, ("local", 0, workers), args.attempts))
                    console.print(f"local, {workers} workers: {rounds[-1].rate:.2f} attempts/s")
                results.append(_median(rounds))
        report(console, results, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _median(rounds: list[Result]) -> Result:
    """The round of median wall (the lower of two), its own figures kept together."""
    return sorted(rounds, key=lambda r: r.wall)[(len(rounds) - 1) // 2]


if __name__ == "__main__":
    sys.exit(main())
