"""The Ray executor: attempts' agent processes run as Ray tasks on a cluster's nodes.

The driver (the machine that typed the command) keeps everything that owns state: the
run folder, the suite's session (its site, its scripted model, the answer checks), the
backend's reading of what an agent left, and the predictions file, which it alone appends
to. What goes to a node is only the agent process: its :class:`ProcessSpec` and the files
of its attempt folder. The node runs it in a private staging folder (the driver's paths in
its command line and environment rewritten to it), under the same timeout, memory cap and
stray-process sweep as a local attempt, and sends the attempt folder back, which the driver
puts in the run folder. So "every attempt exactly once" holds as it does locally: a row is
written by the driver when its attempt's task ends, whatever the cluster does.

- Where: ``RAY_ADDRESS`` or ``--ray-address`` names a cluster; with neither, a Ray is
  started on this machine for the run (one CPU per worker) and stopped after.
- Concurrency: ``--workers`` attempts at once, each a Ray task asking one CPU, so a node
  runs at most as many attempts as it has CPUs.
- A node lost mid-attempt (its raylet or worker killed, the machine gone): the task's error
  becomes a row with status ``error`` and ``error_class`` ``node_lost`` naming the cause,
  retried on resume. Tasks are never retried by Ray (``max_retries=0``): a retry the driver
  does not see could run an attempt twice.
- Interrupts: Ctrl-C twice (or SIGTERM) cancels the running tasks; each node task kills its
  agent's process group and returns what it has, so the rows say ``interrupted``.
- Programs: the nodes run a documented node image (the same checkout at the same path, set
  up by ``scripts/test``'s install steps; agent-benchmarks.md, "Running on a Ray
  cluster"), not a Ray runtime environment, because Chromium comes from apt and the npm
  programs are native binaries that ``pip``/``working_dir`` cannot carry. Before the first
  attempt, the backend's own program check runs on every node; a node whose versions differ
  is refused by name.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.errors import InputError
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec, Slot, run_process
from agent_benchmarks.runner.executor import LocalPool, ProcessLauncher

# Ray's uv hook would make every worker `uv run` an upload of the driver's working folder;
# the nodes run the node image instead (see the module's docstring).
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

# How often the driver looks at an attempt's cancel event while its task runs.
_POLL_S = 0.2
# How long the cluster's address may take to accept a connection before it is refused.
_CONNECT_TIMEOUT_S = 10.0


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if folder.is_dir():
            for child in sorted(folder.iterdir()):
                archive.add(child, arcname=child.name)
    return buffer.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(folder, filter="tar")


def _rewrite_files(folder: Path, moves: dict[str, str]) -> None:
    """Replace paths in the attempt's own files: the driver writes absolute paths into
    them (Claude Code's MCP config, agent-browser chat's attempt.json), and what the agent
    leaves names the node's folders; each side reads its own."""
    pairs = [(old.encode(), new.encode()) for old, new in moves.items()]
    for path in folder.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        changed = data
        for old, new in pairs:
            changed = changed.replace(old, new)
        if changed != data:
            path.write_bytes(changed)


def _move(text: str, moves: dict[str, str]) -> str:
    for old, new in moves.items():
        text = text.replace(old, new)
    return text


def _moved(spec: ProcessSpec, moves: dict[str, str]) -> ProcessSpec:
    """``spec`` with the driver's folders replaced by the node's in every string."""

    def move(text: str) -> str:
        return _move(text, moves)

    return replace(
        spec,
        argv=[move(a) for a in spec.argv],
        env={k: move(v) for k, v in spec.env.items()},
        cwd=Path(move(str(spec.cwd))),
        stdin_text=move(spec.stdin_text) if spec.stdin_text is not None else None,
    )


def _moved_result(result: ProcessResult, moves: dict[str, str]) -> ProcessResult:
    """What the agent printed, with the node's folders named as the driver's."""
    return replace(result, stdout=_move(result.stdout, moves), stderr=_move(result.stderr, moves))


def _guard(marker: str, staging: Path) -> subprocess.Popen[bytes]:
    """A process outliving this worker: if the worker dies (its node lost, the raylet
    killed), it kills the attempt's processes, which carry ``marker``, and removes the
    attempt's staging folder."""
    code = (
        "import os, shutil, sys, time\n"
        "from agent_benchmarks.isolation.process import kill_strays\n"
        "parent = int(sys.argv[1])\n"
        "while os.getppid() == parent:\n"
        "    time.sleep(0.5)\n"
        "kill_strays(sys.argv[2])\n"
        "shutil.rmtree(sys.argv[3], ignore_errors=True)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(os.getpid()), marker, str(staging)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def run_on_node(spec: ProcessSpec, files: bytes, temp_files: bytes) -> tuple[ProcessResult, bytes]:
    """A node's side of an attempt: stage its folder and its temp folder (what the backend
    put there before the start: Claude Code's private HOME with its login, say), run its
    process, send the attempt folder back (the temp folder is removed, as locally).
    Ray's cancel arrives as KeyboardInterrupt: the process is killed and what it left is
    returned, as a local attempt's would be."""
    import ray

    node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:12]}"
    staging = Path(tempfile.mkdtemp(prefix="agent-benchmarks-node-"))
    marker = uuid.uuid4().hex
    guard = _guard(marker, staging)
    try:
        workdir, tmpdir = staging / "work", staging / "tmp"
        _unpack(temp_files, tmpdir)
        _unpack(files, workdir)
        moves = {}
        if spec.workdir is not None:
            moves[str(spec.workdir)] = str(workdir)
        if spec.tmpdir is not None:
            moves[str(spec.tmpdir)] = str(tmpdir)
        _rewrite_files(workdir, moves)
        _rewrite_files(tmpdir, moves)
        staged = replace(_moved(spec, moves), tmpdir=tmpdir, workdir=workdir, marker=marker)
        cancel = threading.Event()
        outcome: list[ProcessResult] = []

        def attempt() -> None:
            try:
                outcome.append(run_process(staged, cancel))
            except KeyboardInterrupt:
                # Ray raised the cancel in this thread: run_process killed what it started
                # on its way out, so the attempt is over, interrupted.
                cancel.set()

        started = time.monotonic()
        thread = threading.Thread(target=attempt)
        thread.start()
        while thread.is_alive():
            try:
                thread.join(timeout=_POLL_S)
            except KeyboardInterrupt:
                cancel.set()
        if outcome:
            result = outcome[0]
        else:
            result = ProcessResult(None, "", "", time.monotonic() - started, interrupted=True)
        back = {new: old for old, new in moves.items()}
        _rewrite_files(workdir, back)
        return replace(_moved_result(result, back), node=node), _pack(workdir)
    finally:
        guard.kill()
        guard.wait()
        shutil.rmtree(staging, ignore_errors=True)


def probe_node(probe: Callable[[], dict[str, str]]) -> dict[str, Any]:
    """What one node has: its name, CPUs and the pinned programs' versions (or why the
    backend's check failed there)."""
    try:
        programs: dict[str, str] | str = probe()
    except InputError as exc:
        programs = str(exc)
    return {"hostname": socket.gethostname(), "cpus": os.cpu_count(), "programs": programs}


class RayExecutor(LocalPool):
    """``workers`` attempts at once on a Ray cluster. One driver thread per running attempt
    does the attempt's driver-side work and waits for its Ray task."""

    # A thread per Ray task in flight: the cluster's slots are its CPUs, asked per task.
    threads_per_worker = 1

    def __init__(self, workers: int, address: str | None = None):
        super().__init__(workers)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        # How the user named the cluster, for messages.
        self._named = f"--ray-address {address}" if address else f"RAY_ADDRESS={self.address}"
        self._temp_dir: str | None = None  # the session folder of a Ray started here
        self._nodes: list[dict[str, Any]] = []
        self._remote: Any = None

    def __enter__(self) -> RayExecutor:
        try:
            self._connect()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _connect(self) -> None:
        import ray

        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if self.address is None:
            # A Ray for this run alone: enough CPUs for every worker, its session files in
            # a folder of its own, removed when the run ends (not /tmp/ray).
            self._temp_dir = tempfile.mkdtemp(prefix="ab-ray-")
            os.environ["RAY_TMPDIR"] = self._temp_dir  # Ray's processes inherit it
            options["num_cpus"] = max(self.workers, os.cpu_count() or 1)
            where = "a local Ray"
        else:
            # Ray waits for an unreachable cluster without end: say so at once instead.
            self._check_reachable()
            options["address"] = self.address
            where = self._named
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"--executor ray: cannot connect to {where}: {exc}") from None
        self._remote = ray.remote(num_cpus=1, max_retries=0)(run_on_node)
        self._nodes = [
            {
                "id": node["NodeID"][:12],
                "node_id": node["NodeID"],
                "address": node["NodeManagerAddress"],
                "cpus": node["Resources"].get("CPU", 0),
            }
            for node in ray.nodes()
            if node["Alive"]
        ]
        if not any(node["cpus"] for node in self._nodes):
            raise InputError(f"--executor ray: the cluster at {self._named} has no CPUs")

    def _check_reachable(self) -> None:
        """Refuse a HOST:PORT (or ray://HOST:PORT) nothing listens on; "auto" and other
        forms are left to Ray."""
        assert self.address is not None
        host, sep, port = self.address.removeprefix("ray://").rpartition(":")
        if not sep or not port.isdigit():
            return
        try:
            socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise InputError(
                f"{self._named}: no Ray cluster answers there ({exc.strerror or exc})"
            ) from None

    def __exit__(self, *exc: object) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if self._temp_dir is not None:
            os.environ.pop("RAY_TMPDIR", None)
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "ray",
            "workers": self.workers,
            "address": self.address or "local (started for the run)",
            "driver": socket.gethostname(),
            "nodes": [{k: v for k, v in n.items() if k != "node_id"} for n in self._nodes],
        }

    @property
    def service_host(self) -> str:
        import ray

        driver_ip = ray.util.get_node_ip_address()
        if all(node["address"] == driver_ip for node in self._nodes):
            return "127.0.0.1"
        return driver_ip

    def check_programs(self, expected: dict[str, str], probe: Callable[[], dict[str, str]]) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote_probe = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        working = [node for node in self._nodes if node["cpus"]]
        refs = [
            remote_probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"], soft=False)
            ).remote(probe)
            for node in working
        ]
        problems = []
        for node, found in zip(working, ray.get(refs), strict=True):
            node.update(hostname=found["hostname"], programs=found["programs"])
            name = f"node {found['hostname']}/{node['id']} ({node['address']})"
            if isinstance(found["programs"], str):
                problems.append(f"{name}: {found['programs']}")
                continue
            for program, version in expected.items():
                there = found["programs"].get(program)
                if there != version:
                    problems.append(f"{name}: {program} is {there or 'missing'}, here {version}")
        if problems:
            raise InputError(
                "--executor ray: the nodes' programs differ from this machine's; nothing was "
                "run:\n  " + "\n  ".join(problems)
            )

    def _launcher(self, slot: Slot | None, waited: list[float]) -> ProcessLauncher:
        # A thread per task in flight, its slot held throughout: none waits for one.
        return self._launch

    def _launch(self, spec: ProcessSpec, cancel: threading.Event) -> ProcessResult:
        import ray
        from ray.exceptions import RayError, TaskCancelledError

        started = time.monotonic()
        files = _pack(spec.workdir) if spec.workdir is not None else b""
        temp_files = _pack(spec.tmpdir) if spec.tmpdir is not None else b""
        ref = self._remote.remote(spec, files, temp_files)
        cancelled = False
        while True:
            ready, _ = ray.wait([ref], timeout=_POLL_S)
            if ready:
                break
            if cancel.is_set() and not cancelled:
                ray.cancel(ref)
                cancelled = True
        try:
            result, back = ray.get(ref)
        except TaskCancelledError:
            # Cancelled before its process started (or while it was being staged).
            return ProcessResult(
                None, "", "", time.monotonic() - started, interrupted=True, signal=None
            )
        except RayError as exc:
            cause = str(exc).strip().splitlines()
            return ProcessResult(
                None,
                "",
                "",
                time.monotonic() - started,
                lost=f"{type(exc).__name__}: {cause[0] if cause else 'no detail'}",
            )
        if spec.workdir is not None:
            shutil.rmtree(spec.workdir, ignore_errors=True)
            _unpack(back, spec.workdir)
        return result
