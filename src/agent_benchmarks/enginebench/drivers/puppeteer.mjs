// The engine benchmark's Puppeteer driver (puppeteer-core, pinned in package-lock.json).
//
// Connects to the browser the harness launched (its CDP endpoint is the first line of
// ENGINEBENCH_ENDPOINT_FILE: ws:// for lightpanda serve, http:// for Chromium), runs each
// worker of the task's program (ENGINEBENCH_PROGRAM, a JSON file:
// agent_benchmarks/enginebench/programs.py) on a connection, fresh context and page of its
// own, all at once, and prints {"reads": [[...], ...]}: each worker's reads, the elements' outerHTML.
// ENGINEBENCH_BASE_URL is the episode's site root, which every "go" path is under.
import { readFileSync } from "node:fs";
import puppeteer from "puppeteer-core";

const program = JSON.parse(readFileSync(process.env.ENGINEBENCH_PROGRAM, "utf8"));
const endpoint = readFileSync(process.env.ENGINEBENCH_ENDPOINT_FILE, "utf8").trim();
const base = process.env.ENGINEBENCH_BASE_URL;
// Puppeteer's name for "no request for 500 ms" is networkidle0 (upstream's waitab.py).
const waitUntil = program.wait === "networkidle" ? "networkidle0" : program.wait;

async function run(ops) {
  // A connection per worker: lightpanda serve gives a connection one context at a time.
  const browser = await puppeteer.connect(
    endpoint.startsWith("ws://") ? { browserWSEndpoint: endpoint } : { browserURL: endpoint },
  );
  const context = await browser.createBrowserContext();
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
        await page.type(op.selector, op.value);
        break;
      case "select":
        await page.select(op.selector, op.value);
        break;
      case "check":
        await page.$eval(op.selector, (box) => box.checked || box.click());
        break;
      case "press":
        await (await page.$(op.selector)).press(op.key);
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
  await browser.disconnect();
  return reads;
}

const reads = await Promise.all(program.workers.map(run));
console.log(JSON.stringify({ reads }));
