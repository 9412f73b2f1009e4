"""The run engine: attempts, executors, resume, progress.

The pieces, from the outside in:

* :mod:`.command`: ``<suite>-run`` for any backend: flags, run folder, manifest,
  ``--resume``, grading at the end (:func:`run_command`, :class:`BackendCLI`);
* :mod:`.session`: a suite's side of an attempt: prompt, attachments, answer extraction
  (:class:`TaskSession`);
* :mod:`.plan`: which attempts a run still owes (:func:`plan_attempts`);
* :mod:`.engine`: one attempt to one row (:class:`AttemptRunner`), and the loop that
  writes rows as attempts finish (:func:`execute`);
* :mod:`.executor`: where attempts run (:class:`Executor`, :class:`LocalPool`);
* :mod:`.process`: one agent process in its own process group, with a timeout, a memory
  cap and no survivors (:func:`run_process`);
* :mod:`.progress`: the bar, or one line per attempt when not on a terminal.
"""

from agent_benchmarks.runner.command import BackendCLI, run_command
from agent_benchmarks.runner.engine import AttemptRunner, execute
from agent_benchmarks.runner.executor import Executor, LocalPool
from agent_benchmarks.runner.plan import AttemptKey, Plan, plan_attempts
from agent_benchmarks.runner.process import ProcessResult, ProcessSpec, run_process
from agent_benchmarks.runner.session import TaskSession

__all__ = [
    "AttemptKey",
    "AttemptRunner",
    "BackendCLI",
    "Executor",
    "LocalPool",
    "Plan",
    "ProcessResult",
    "ProcessSpec",
    "TaskSession",
    "execute",
    "plan_attempts",
    "run_command",
    "run_process",
]
