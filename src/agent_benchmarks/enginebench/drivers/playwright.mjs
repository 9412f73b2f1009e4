// The engine benchmark's Playwright driver (playwright-core, pinned in package-lock.json).
//
// The same program as drivers/puppeteer.mjs (see there), through Playwright's API:
// connectOverCDP to the browser the harness launched, a connection, fresh context and page
// per worker, all at once; prints {"reads": [[...], ...]}.
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const program = JSON.parse(readFileSync(process.env.ENGINEBENCH_PROGRAM, "utf8"));
const endpoint = readFileSync(process.env.ENGINEBENCH_ENDPOINT_FILE, "utf8").trim();
const base = process.env.ENGINEBENCH_BASE_URL;
const waitUntil = program.wait;

async function run(ops) {
  // A connection per worker: lightpanda serve gives a connection one context at a time.
  const browser = await chromium.connectOverCDP(endpoint);
  const context = await browser.newContext();
  const page = await context.newPage();
  const reads = [];
  for (const op of ops) {
    switch (op.op) {
      case "go":
        await page.goto(base + op.path, { waitUntil });
        break;
      case "follow": {
        const url = await page.evaluate(op.script);
        if (!url) throw new Error("no link to follow");
        await page.goto(url, { waitUntil });
        break;
      }
      case "read":
        reads.push(await page.evaluate(op.script));
        break;
      case "click":
        await page.click(op.selector);
        break;
      case "fill":
        await page.fill(op.selector, op.value);
        break;
      case "select":
        await page.selectOption(op.selector, op.value);
        break;
      case "check":
        await page.check(op.selector);
        break;
      case "press":
        await page.press(op.selector, op.key);
        break;
      case "wait":
        await page.waitForSelector(op.selector);
        break;
      case "wait_until":
        await page.waitForFunction(op.script);
        break;
      default:
        throw new Error(`unknown operation ${op.op}`);
    }
  }
  await page.close();
  await context.close();
  await browser.close();
  return reads;
}

const reads = await Promise.all(program.workers.map(run));
console.log(JSON.stringify({ reads }));
