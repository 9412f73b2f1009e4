"""The engine benchmark (``agent-benchmarks engine``): browser stacks measured without a
model, upstream's ``pandascript-vs-cdp`` method made offline and reproducible.

A configuration is a driver on an engine (:mod:`.configs`): Lightpanda's script replay
(``lightpanda run``), Puppeteer and Playwright for Node and Playwright for Python over CDP on
``lightpanda serve`` or Debian's Chromium (:mod:`.engines`), and each browser MCP server the
project drives, played by a scripted MCP client through the server's own tools
(:mod:`.mcp_client`). Every configuration does the same scripted tasks on the bundled site
(:mod:`.tasks`: localweb tasks, a sign-in, a crawl), each execution checked by the task's
contract: one that did not do the task is discarded and counted, never timed.

:mod:`.bench` runs the rotations (cold and warm, warm-up then measured rotations
interleaving every configuration, paced) and writes ``raw.jsonl``: a meta record
(:mod:`.meta`), then one record per execution with its time, CPU seconds and peak memory
over its whole process tree (:mod:`.measure`). :mod:`.report` turns that file, and nothing
else, into the Markdown and JSON report and the SVG figures, byte for byte the same each
time.
"""
