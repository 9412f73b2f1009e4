"""What happens inside one episode besides the agent's own work: the harness's hand on it.

- :mod:`.budget`: one budget for every agent (tool calls, tokens, dollars, temperature),
  recorded in the same fields whatever the agent;
- :mod:`.wire` and :mod:`.meter`: the model meter, a pass-through between an agent and its
  model API that counts each reply's tool calls and tokens, enforces the budget for agents
  that cannot, sets the temperature, and is where an episode's fault fires (after the
  agent's k-th tool call, just before its next model request);
- :mod:`.faults`: the faults a run injects into the browser stack mid-episode (the engine
  killed, its connection cut, the page's nodes replaced, the site interrupting), and the
  per-row record of whether and when each fired;
- :mod:`.mcp_relay`: the project's own stdio relay between an agent and its browser MCP
  server, through which a connection is cut;
- :mod:`.progress`: the no-progress signal of a row's trace.

Below the runner and the backends, above isolation; it imports neither of them.
"""
