/**
 * What observability adds to each request and each task, measured in-process (a tight loop, so a busy machine
 * shifts it less than an end-to-end load): the rate-limit check, the two clock reads and the latency
 * observation a JSON-RPC request pays, and the lifecycle calls a task pays (metrics, and the task log at
 * --quiet, where its lines are dropped, and at info into a discarding sink), and the audit log's line per call
 * (formatted, buffered and written in 64 KiB batches to a real file in a temp folder, rotated at 10 MiB: the
 * writes are in the figure, amortised over the lines). Compare with the bench's
 * CPU µs per request (npm run bench).
 *   bun scripts/bench-observability.ts [--n 2000000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AuditLog } from "../src/server/audit-log";
import { createLogger } from "../src/log";
import { NodeMetrics } from "../src/metrics/node-metrics";
import { PeerRateLimiter } from "../src/server/rate-limit";
import { allOf } from "../src/tasks/lifecycle";
import { taskLog } from "../src/tasks/task-log";
import type { Task } from "../src/protocol/types";

const { values } = parseArgs({ options: { n: { type: "string", default: "2000000" } } });
const N = Number(values.n);
const metrics = new NodeMetrics({
  version: "bench",
  executor: "echo",
  startedAt: Date.now(),
  taskStates: async () => [],
  load: () => ({ running: 0, queued: 0, waitingForInput: 0 }),
  listeners: () => [{ listener: "mtls", open: 0, unauthenticated: 0, max: 1024 }],
  descriptors: () => ({ exhausted: false, exhaustions: 0 }),
  certificateNotAfter: () => new Date(),
});
const limiter = new PeerRateLimiter({ perSecond: 1e6, burst: 1e6 });
const task = {
  id: "01M8SVJ5RY30Q1BQRS9S2EDM08",
  contextId: "01M8SVJ5RY30Q1BQRS9S2EDM08",
  status: { state: "TASK_STATE_COMPLETED" },
} as Task;

function time(label: string, fn: () => void): void {
  for (let i = 0; i < N / 10; i++) fn(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn();
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(`${label.padEnd(58)} ${ns.toFixed(0).padStart(6)} ns`);
}

let sink = 0;
time("per request: rate-limit check + clock reads + observation", () => {
  sink += limiter.take("alpha");
  const t = performance.now();
  metrics.rpc("SendMessage", (performance.now() - t) / 1000, undefined);
});
const quiet = allOf(taskLog(createLogger(() => {}, "warn", "json")), metrics);
time("per task: accepted + finished, task log at --quiet", () => {
  quiet.accepted(task, "alpha", "new");
  quiet.finished(task, "alpha", "TASK_STATE_COMPLETED", 0.001, 0.0001);
});
const info = allOf(taskLog(createLogger((l) => (sink += l.length), "info", "json")), metrics);
time("per task: accepted + finished, two JSON lines (not written)", () => {
  info.accepted(task, "alpha", "new");
  info.finished(task, "alpha", "TASK_STATE_COMPLETED", 0.001, 0.0001);
});
const dir = mkdtempSync(join(tmpdir(), "a2a-bench-audit-"));
const audit = new AuditLog({ path: join(dir, "audit.jsonl"), maxBytes: 10 * 1024 * 1024, keep: 1 });
const fingerprint = "3F:8A:11:C2:5D:90:7B:E4:21:AC:66:0F:93:D8:4E:B7:12:C5:39:F0:8D:6A:2E:B1:74:C9:05:DE:88:13:AF:9A";
time("per request: one audit line, buffered and written in batches", () => {
  const t = performance.now();
  audit.call({
    peer: "alpha",
    fingerprint,
    binding: "jsonrpc",
    method: "SendMessage",
    taskId: task.id,
    outcome: "ok",
    ms: performance.now() - t,
  });
});
audit.close();
rmSync(dir, { recursive: true, force: true });
if (sink < 0) console.log(sink);
