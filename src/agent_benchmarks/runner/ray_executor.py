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

import ipaddress
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import MARKER_ENV, ProcessResult, ProcessSpec, Slot, reap
from agent_benchmarks.isolation.scratch import temp_root
from agent_benchmarks.runner.executor import LocalPool, ProcessLauncher
from agent_benchmarks.runner.ray_node import pack, probe_node, run_on_node, unpack

# Ray's uv hook would make every worker `uv run` an upload of the driver's working folder;
# the nodes run the node image instead (see the module's docstring).
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

# How often the driver looks at an attempt's cancel event while its task runs.
_POLL_S = 0.2
# How long the cluster's address may take to accept a connection before it is refused.
_CONNECT_TIMEOUT_S = 10.0
# How long a node may take to answer the probe (start a worker, run the backend's program
# check) before it is left out of the run.
_PROBE_TIMEOUT_S = 60.0
# The label Ray gives every node: its id (attempts are held to the nodes probed).
_NODE_ID_LABEL = "ray.io/node-id"
# Below a Ray's own temp folder (ab-ray-OWNER + mkdtemp's 8) its plasma store's socket:
# ray/session_<date>_<time>_<us>_<pid>/sockets/plasma_store, 68 bytes with a 7-digit pid.
_RAY_SOCKET_BELOW = len("/ab-ray-") + 16 + 8 + 68


class RayExecutor(LocalPool):
    """``workers`` attempts at once on a Ray cluster. One driver thread per running attempt
    does the attempt's driver-side work and waits for its Ray task."""

    # A thread per Ray task in flight: the cluster's slots are its CPUs, asked per task.
    threads_per_worker = 1

    def __init__(self, workers: int, address: str | None = None, owner: str | None = None):
        super().__init__(workers)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        # The key of the run (or sweep) a Ray started here belongs to: its folder and its
        # processes carry it, so that a later session of the run removes what a driver
        # killed outright left of it (see _start_local).
        self.owner = owner
        # How the user named the cluster, for messages.
        self._named = f"--ray-address {address}" if address else f"RAY_ADDRESS={self.address}"
        self._temp_dir: str | None = None  # the session folder of a Ray started here
        # The cluster's nodes as found at the start; a node left out of the run (its probe
        # failed, or it was lost during the run) has "left_out" (why) and runs nothing.
        self._nodes: list[dict[str, Any]] = []
        self._nodes_lock = threading.Lock()
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
        marker = None
        if self.address is None:
            marker = self._start_local()
            options["num_cpus"] = max(self.workers, os.cpu_count() or 1)
            where = "a local Ray"
        else:
            # Ray waits for an unreachable cluster without end: say so at once instead.
            if self._check_reachable():
                _connect_by_loopback()
            options["address"] = self.address
            where = self._named
        if marker is not None:
            os.environ[MARKER_ENV] = marker  # the processes ray.init starts inherit it
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"--executor ray: cannot connect to {where}: {exc}") from None
        finally:
            if marker is not None:
                os.environ.pop(MARKER_ENV, None)
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

    def _start_local(self) -> str | None:
        """Ready a Ray for this run alone: its session files in a folder of its own, removed
        when the run ends (not /tmp/ray). A driver killed outright takes its raylet and GCS
        with it, but Ray's agents live on and the folder stays: with an owner, they are
        removed here, found by the marker this Ray's processes carry (returned)."""
        prefix = "ab-ray-"
        marker = None
        if self.owner is not None:
            prefix = f"ab-ray-{self.owner}"  # short: Ray's socket paths are under it
            owned = f"ray-{self.owner}-"
            reap(owned)
            for left in temp_root(_RAY_SOCKET_BELOW).glob(f"{prefix}*"):
                shutil.rmtree(left, ignore_errors=True)
            marker = f"{owned}{uuid.uuid4().hex}"
        self._temp_dir = tempfile.mkdtemp(prefix=prefix, dir=temp_root(_RAY_SOCKET_BELOW))
        os.environ["RAY_TMPDIR"] = self._temp_dir  # Ray's processes inherit it
        return marker

    def _check_reachable(self) -> bool:
        """Refuse a HOST:PORT (or ray://HOST:PORT) nothing listens on; "auto" and other
        forms are left to Ray. Whether the cluster answers on a loopback address only."""
        assert self.address is not None
        host, sep, port = self.address.removeprefix("ray://").rpartition(":")
        if not sep or not port.isdigit():
            return False
        try:
            socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise InputError(
                f"{self._named}: no Ray cluster answers there ({exc.strerror or exc})"
            ) from None
        if self.address.startswith("ray://") or not _is_loopback(host):
            return False
        from ray.util import get_node_ip_address

        # Ray connects to a loopback address by this machine's own address instead: fine
        # for a cluster listening on every address, not for one bound to loopback.
        try:
            socket.create_connection((get_node_ip_address(), int(port)), timeout=1).close()
        except OSError:
            return True
        return False

    def __exit__(self, *exc: object) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if self._temp_dir is not None:
            os.environ.pop("RAY_TMPDIR", None)
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def describe(self) -> dict[str, Any]:
        with self._nodes_lock:
            nodes = [{k: v for k, v in n.items() if k != "node_id"} for n in self._nodes]
        return {
            "kind": "ray",
            "workers": self.workers,
            "address": self.address or "local (started for the run)",
            "driver": socket.gethostname(),
            "nodes": nodes,
        }

    @property
    def service_host(self) -> str:
        import ray

        driver_ip = ray.util.get_node_ip_address()
        if all(node["address"] == driver_ip for node in self._usable()):
            return "127.0.0.1"
        return driver_ip

    def _usable(self) -> list[dict[str, Any]]:
        """The nodes attempts may run on: with CPUs, not left out."""
        with self._nodes_lock:
            return [n for n in self._nodes if n["cpus"] and "left_out" not in n]

    def _leave_out(self, node: dict[str, Any], why: str) -> None:
        with self._nodes_lock:
            node.setdefault("left_out", why)

    def check_programs(
        self, expected: dict[str, str], probe: Callable[[], dict[str, str]] | None
    ) -> None:
        """Probe every node attempts may run on: one that cannot be probed (its raylet
        killed, though Ray lists it as alive for a while; no answer in time) is left out of
        the run, named with the reason in the manifest; one whose programs differ refuses
        the run. None left: one message, and nothing runs."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote_probe = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        probes = {
            remote_probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["node_id"], soft=False)
            ).remote(probe): node
            for node in self._usable()
        }
        ready, late = ray.wait(list(probes), num_returns=len(probes), timeout=_PROBE_TIMEOUT_S)
        for ref in late:
            self._leave_out(probes[ref], f"no answer to the probe in {_PROBE_TIMEOUT_S:.0f} s")
        problems = []
        for ref in ready:
            node = probes[ref]
            try:
                found = ray.get(ref)
            except ray.exceptions.RayError as exc:
                self._leave_out(node, f"its probe failed: {_cause(exc)}")
                continue
            node.update(hostname=found["hostname"], programs=found["programs"])
            name = f"node {_name(node)} ({node['address']})"
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
        if not self._usable():
            raise InputError(
                f"--executor ray: no node of the cluster at {self._named} can run attempts; "
                "nothing was run:\n  " + "\n  ".join(self._left_out_lines())
            )

    def left_out(self) -> list[str]:
        return [f"--executor ray: left out {line}" for line in self._left_out_lines()]

    def _left_out_lines(self) -> list[str]:
        with self._nodes_lock:
            return [
                f"node {_name(n)} ({n['address']}): {n['left_out']}"
                for n in self._nodes
                if "left_out" in n
            ]

    def _launcher(self, slot: Slot | None, waited: list[float]) -> ProcessLauncher:
        # A thread per task in flight, its slot held throughout: none waits for one.
        return self._launch

    def _launch(self, spec: ProcessSpec, cancel: threading.Event) -> ProcessResult:
        import ray
        from ray.exceptions import RayError, TaskCancelledError

        started = time.monotonic()

        def lost(why: str, node: dict[str, Any] | None = None) -> ProcessResult:
            name = _name(node) if node is not None else None
            return ProcessResult(None, "", "", time.monotonic() - started, lost=why, node=name)

        usable = [node["node_id"] for node in self._usable()]
        if not usable:
            return lost(_NONE_LEFT + "; ".join(self._left_out_lines()))
        files = pack(spec.workdir) if spec.workdir is not None else b""
        temp_files = pack(spec.tmpdir) if spec.tmpdir is not None else b""
        # Only on the nodes probed and not lost: Ray lists a node whose raylet was killed
        # as alive for a while, and would send attempts there.
        selector = {_NODE_ID_LABEL: f"in({','.join(usable)})"}
        ref = self._remote.options(label_selector=selector).remote(spec, files, temp_files)
        cancelled = stranded = False
        while True:
            ready, _ = ray.wait([ref], timeout=_POLL_S)
            if ready:
                break
            if not cancelled and (cancel.is_set() or not self._usable()):
                # Ctrl-C twice, or every node it could run on lost: it would wait for ever.
                stranded = not cancel.is_set()
                ray.cancel(ref)
                cancelled = True
        try:
            result, back = ray.get(ref)
        except TaskCancelledError:
            if stranded:
                return lost(_NONE_LEFT + "; ".join(self._left_out_lines()))
            # Cancelled before its process started (or while it was being staged).
            return ProcessResult(
                None, "", "", time.monotonic() - started, interrupted=True, signal=None
            )
        except RayError as exc:
            node = self._node_named_in(str(exc))
            if node is not None and type(exc).__name__ in _NODE_GONE:
                self._leave_out(node, f"lost during the run: {_cause(exc)}")
            return lost(_cause(exc), node)
        if spec.workdir is not None:
            shutil.rmtree(spec.workdir, ignore_errors=True)
            unpack(back, spec.workdir)
        return result

    def _node_named_in(self, text: str) -> dict[str, Any] | None:
        """The node a Ray error names (its id is only in the error's text)."""
        with self._nodes_lock:
            return next((n for n in self._nodes if n["node_id"] in text), None)


_NONE_LEFT = "no node of the cluster is left to run it: "
# Ray's errors for a task whose node is gone (as opposed to its worker alone).
_NODE_GONE = frozenset({"NodeDiedError", "TaskUnschedulableError"})


def _name(node: dict[str, Any]) -> str:
    """A node as rows and messages name it: HOST/ID (its address until it has answered)."""
    return f"{node.get('hostname') or node['address']}/{node['id']}"


def _cause(exc: BaseException) -> str:
    cause = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {cause[0] if cause else 'no detail'}"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _connect_by_loopback() -> None:
    """Make this process Ray's node on the loopback address. Ray 2.60 replaces a loopback
    cluster address with this machine's own (``resolve_ip_for_localhost``), which a cluster
    bound to loopback does not answer on: the driver then waits without end. Ray's own
    switch for clusters that live on loopback (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
    its default on macOS and Windows) makes this machine's address the loopback one, for
    the address and for the node the driver joins; it is read when Ray is imported, so the
    module's copy is set too."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False
