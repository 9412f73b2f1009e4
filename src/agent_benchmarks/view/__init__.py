"""The run browser (``agent-benchmarks view``) and the Inspect export
(``agent-benchmarks export --inspect``): runs read for people and for other tools.

- ``runs``: the runs under a results folder, their state (running, interrupted, graded)
  and figures, read without writing into a run folder
- ``site``: the browser's pages (the runs, a run, an attempt), written as static files
  beside the runs or served live on 127.0.0.1
- ``inspect_log``: a run as an Inspect eval log, written by inspect-ai's own writer
"""
