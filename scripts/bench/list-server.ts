/**
 * An a2a-node (the real daemon, in-process, echo executor) with an event-loop delay monitor beside it, for the
 * ListTasks benchmark: a stall of the node's loop is measured from inside the process that stalls, not guessed
 * from a client's latency. It answers one command per stdin line, on stdout:
 *   "reset"  clears the monitor and the peak RSS (Linux's clear_refs), then "ok"
 *   "stats"  {"maxStallMs", "p99StallMs", "rssBytes", "peakRssBytes"} as one JSON line
 *   bun scripts/bench/list-server.ts HOME PORT [MAX_LIST_BYTES]
 */
import "reflect-metadata";
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DEFAULTS } from "../../src/config";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { createLogger } from "../../src/log";
import { startNode } from "../../src/node";
import { peakRssBytes } from "./proc";

const [home, port, maxListBytes] = process.argv.slice(2);
const node = await startNode(
  home,
  {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: Number(port),
    maxConcurrent: 8,
    maxCallerBytes: 0,
    ...(maxListBytes ? { maxListBytes: Number(maxListBytes) } : {}),
  },
  createLogger((l) => process.stderr.write(l), "warn"),
  { executor: new EchoExecutor() },
);
// 1 ms resolution: the monitor's own timer is what notices a late turn of the loop.
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
process.stdout.write(`listening ${node.url}\n`);

let buffered = "";
process.stdin.on("data", (chunk: Buffer) => {
  buffered += chunk.toString("utf8");
  let nl: number;
  while ((nl = buffered.indexOf("\n")) !== -1) {
    const command = buffered.slice(0, nl).trim();
    buffered = buffered.slice(nl + 1);
    if (command === "reset") {
      delay.reset();
      writeFileSync("/proc/self/clear_refs", "5"); // peak RSS starts again from the current RSS
      process.stdout.write("ok\n");
    } else if (command === "stats") {
      const stats = {
        maxStallMs: delay.max / 1e6,
        p99StallMs: delay.percentile(99) / 1e6,
        rssBytes: process.memoryUsage.rss(),
        peakRssBytes: peakRssBytes(process.pid),
      };
      process.stdout.write(`${JSON.stringify(stats)}\n`);
    }
  }
});
process.on("SIGTERM", () => void node.stop().then(() => process.exit(0)));
