"""The run engine: attempts, executors, resume, progress; the run command; sweeps.

The pieces, from the outside in:

* :mod:`.command`: ``<suite>-run``, ``-mcp-run``, ``-ab-run``: a command line to a run spec;
* :mod:`.sweep`: a sweep file's grid of runs;
* :mod:`.launch`: a run from its :class:`~agent_benchmarks.spec.run_spec.RunSpec`: checks, run
  folder, manifest, ``--resume``, grading at the end (:func:`prepare`, :func:`launch`);
* :mod:`.session`: a suite's side of an attempt: prompt, attachments, answer extraction
  (:class:`TaskSession`);
* :mod:`.plan`: which attempts a run still owes (:func:`plan_attempts`);
* :mod:`.engine`: one attempt to one row (:class:`AttemptRunner`), and the loop that
  writes rows as attempts finish (:func:`execute`);
* :mod:`.executor`: where attempts run (:class:`Executor`, :class:`LocalPool`);
* :mod:`.progress`: the bar, or one line per attempt when not on a terminal.

An attempt's agent process, and everything it leaves, is :mod:`agent_benchmarks.isolation`'s
(below the backends, which start their programs through it).

Import the module you need: this package imports none of them.
"""
