"""Nothing of an attempt survives it: its agent process, whatever that started, its temp.

* :mod:`.process`: one agent process in its own process group, with a timeout, a memory
  cap and no survivors (:func:`~.process.run_process`), and the slots that bound how many
  run at once;
* :mod:`.reaping`: a browser daemon's descendants adopted, killed and reaped (used inside
  an attempt, by the processes that start agent-browser);
* :mod:`.scratch`: each attempt's private temp folder;
* :mod:`.resources`: what an attempt's processes cost the machine (memory and CPU by role,
  sampled beside it), and the machine's record.

Below the backends and the runner, which both use it; it imports neither. Import the
module you need: this package imports none of them, so that a process needing one piece
(an attempt's driver, which only reaps) does not load the rest with it.
"""
