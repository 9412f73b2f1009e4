// The engine benchmark's Puppeteer driver (puppeteer-core, pinned in package-lock.json).
//
// Connects to the browser the harness launched and runs each worker of the task's program
// (program.mjs) on a connection, fresh context and page of its own, all at once; prints
// {"reads": [[...], ...]}: each worker's reads, the elements' outerHTML.
import puppeteer from "puppeteer-core";
import { endpoint, program, runOperations } from "./program.mjs";

// Puppeteer's name for "no request for 500 ms" is networkidle0 (upstream's waitab.py).
const waitUntil = program.wait === "networkidle" ? "networkidle0" : program.wait;
const own = {
  fill: (page, op) => page.type(op.selector, op.value),
  select: (page, op) => page.select(op.selector, op.value),
  check: (page, op) => page.$eval(op.selector, (box) => box.checked || box.click()),
  press: async (page, op) => (await page.$(op.selector)).press(op.key),
};

async function run(ops) {
  // A connection per worker: lightpanda serve gives a connection one context at a time.
  const browser = await puppeteer.connect(
    endpoint.startsWith("ws://") ? { browserWSEndpoint: endpoint } : { browserURL: endpoint },
  );
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const reads = await runOperations(page, ops, waitUntil, own);
  await page.close();
  await context.close();
  await browser.disconnect();
  return reads;
}

const reads = await Promise.all(program.workers.map(run));
console.log(JSON.stringify({ reads }));
