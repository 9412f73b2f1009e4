"""Compare and report: graded runs side by side, with the evidence a reader needs.

- ``load``: a run folder into typed records (graded on the fly where scores.json is missing)
- ``stacks``: what a row is (backend + engine + model) and which programs it drives
- ``stats``: bootstrap intervals over tasks, pass@k, pass^k
- ``leaks``: the leak audit (benchmark mirrors, dataset caches, task ids in calls)
- ``eligibility``: headline eligibility and its reasons
- ``compare``: the scoreboard, composite, winners, per-task and paired comparisons
- ``markdown``, ``html``, ``fmt``: the renderers; ``schema``: the JSON record
- ``commands``: ``agent-benchmarks compare`` and ``leak-audit``
"""
