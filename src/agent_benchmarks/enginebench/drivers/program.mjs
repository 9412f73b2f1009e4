// What the engine benchmark's Node drivers (puppeteer.mjs, playwright.mjs) share: the
// task's program (ENGINEBENCH_PROGRAM, a JSON file written by
// agent_benchmarks/enginebench/programs.py), the browser's CDP endpoint (the first line of
// ENGINEBENCH_ENDPOINT_FILE: ws:// for lightpanda serve, http:// for Chromium), and one
// worker's operations run on a page. The calls the two libraries name alike are made here;
// a driver gives its own for filling, choosing, ticking and pressing.
import { readFileSync } from "node:fs";

export const program = JSON.parse(readFileSync(process.env.ENGINEBENCH_PROGRAM, "utf8"));
export const endpoint = readFileSync(process.env.ENGINEBENCH_ENDPOINT_FILE, "utf8").trim();
// The episode's site root, which every "go" path is under.
const base = process.env.ENGINEBENCH_BASE_URL;

export async function runOperations(page, ops, waitUntil, own) {
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
      case "select":
      case "check":
      case "press":
        await own[op.op](page, op);
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
  return reads;
}
