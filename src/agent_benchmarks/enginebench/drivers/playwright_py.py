"""The engine benchmark's Playwright-for-Python driver (``playwright`` in uv.lock).

The program drivers/program.mjs runs for the Node drivers, through Playwright's Python API
(async, so that the workers run at once): connect_over_cdp to the browser the harness
launched, a connection, fresh context and page per worker; prints {"reads": [[...], ...]}.
Run by the harness's own Python, which pays its interpreter's start as the Node drivers pay
Node's.
"""

import asyncio
import json
import os
from pathlib import Path

from playwright.async_api import Playwright, async_playwright

PROGRAM = json.loads(Path(os.environ["ENGINEBENCH_PROGRAM"]).read_text())
ENDPOINT = Path(os.environ["ENGINEBENCH_ENDPOINT_FILE"]).read_text().strip()
BASE = os.environ["ENGINEBENCH_BASE_URL"]
WAIT = PROGRAM["wait"]


async def run(playwright: Playwright, ops: list[dict]) -> list[str]:
    # A connection per worker: lightpanda serve gives a connection one context at a time.
    browser = await playwright.chromium.connect_over_cdp(ENDPOINT)
    context = await browser.new_context()
    page = await context.new_page()
    reads = []
    for op in ops:
        kind = op["op"]
        if kind == "go":
            await page.goto(BASE + op["path"], wait_until=WAIT)
        elif kind == "follow":
            url = await page.evaluate(op["script"])
            if not url:
                raise RuntimeError("no link to follow")
            await page.goto(url, wait_until=WAIT)
        elif kind == "read":
            reads.append(await page.evaluate(op["script"]))
        elif kind == "click":
            await page.click(op["selector"])
        elif kind == "fill":
            await page.fill(op["selector"], op["value"])
        elif kind == "select":
            await page.select_option(op["selector"], op["value"])
        elif kind == "check":
            await page.check(op["selector"])
        elif kind == "press":
            await page.press(op["selector"], op["key"])
        elif kind == "wait":
            await page.wait_for_selector(op["selector"])
        elif kind == "wait_until":
            await page.wait_for_function(op["script"])
        else:
            raise RuntimeError(f"unknown operation {kind}")
    await page.close()
    await context.close()
    await browser.close()
    return reads


async def main() -> None:
    async with async_playwright() as playwright:
        reads = await asyncio.gather(*(run(playwright, ops) for ops in PROGRAM["workers"]))
        print(json.dumps({"reads": reads}))


asyncio.run(main())
