// The engine benchmark's Playwright driver (playwright-core, pinned in package-lock.json).
//
// The same as puppeteer.mjs, through Playwright's API: connectOverCDP to the browser the
// harness launched, a connection, fresh context and page per worker, all at once; prints
// {"reads": [[...], ...]}.
import { chromium } from "playwright-core";
import { endpoint, program, runOperations } from "./program.mjs";

const own = {
  fill: (page, op) => page.fill(op.selector, op.value),
  select: (page, op) => page.selectOption(op.selector, op.value),
  check: (page, op) => page.check(op.selector),
  press: (page, op) => page.press(op.selector, op.key),
};

async function run(ops) {
  // A connection per worker: lightpanda serve gives a connection one context at a time.
  const browser = await chromium.connectOverCDP(endpoint);
  const context = await browser.newContext();
  const page = await context.newPage();
  const reads = await runOperations(page, ops, program.wait, own);
  await page.close();
  await context.close();
  await browser.close();
  return reads;
}

const reads = await Promise.all(program.workers.map(run));
console.log(JSON.stringify({ reads }));
