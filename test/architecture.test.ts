/**
 * The directions the code base holds: which modules may import which. Read from the
 * import statements of every source file, so a violation fails here before it settles in.
 */
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dirname, "..");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import of a file, as a path from the repository root without extension. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(
    /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g,
  )) {
    const spec = m[1] ?? m[2];
    out.push(relative(ROOT, resolve(dirname(file), spec)).replace(/\.ts$/, ""));
  }
  return out;
}

const SOURCES = [...files(join(ROOT, "src")), ...files(join(ROOT, "pki"))].map((f) => ({
  file: relative(ROOT, f),
  imports: importsOf(f),
}));

const RULES: [string, (file: string) => boolean, (target: string) => boolean][] = [
  [
    "client/ never imports server/ or node.ts",
    (f) => f.startsWith("src/client/"),
    (t) => t.startsWith("src/server/") || t === "src/node",
  ],
  // The gRPC client speaks the wire format (grpc/); what serves it is the node's, as server/ is.
  ["client/ never imports grpc/server.ts", (f) => f.startsWith("src/client/"), (t) => t === "src/grpc/server"],
  ["pki/ imports nothing of src/", (f) => f.startsWith("pki/"), (t) => t.startsWith("src/")],
  [
    "protocol/ (the A2A vocabulary) never imports rpc/, server/ or tasks/",
    (f) => f.startsWith("src/protocol/"),
    (t) => t.startsWith("src/rpc/") || t.startsWith("src/server/") || t.startsWith("src/tasks/"),
  ],
  [
    "store/ never imports rpc/ or the protocol's errors",
    (f) => f.startsWith("src/store/"),
    (t) => t.startsWith("src/rpc/") || t === "src/protocol/errors",
  ],
  ["tasks/ never imports rpc/", (f) => f.startsWith("src/tasks/"), (t) => t.startsWith("src/rpc/")],
  [
    "tasks/ and executors/ raise their own refusals: they never import rpc/ or the protocol's errors",
    (f) => f.startsWith("src/tasks/") || f.startsWith("src/executors/"),
    (t) => t.startsWith("src/rpc/") || t === "src/protocol/errors",
  ],
  [
    "help/ (the manual's pages, text) imports nothing outside help/",
    (f) => f.startsWith("src/help/"),
    (t) => !t.startsWith("src/help/"),
  ],
  [
    "grpc/ (wire format of the third binding) imports only itself and protocol/types.ts",
    (f) => f.startsWith("src/grpc/"),
    (t) => !t.startsWith("src/grpc/") && t !== "src/protocol/types",
  ],
  // Tracing is a floor of its own that bindings, executors and the client will call into, never the reverse.
  [
    "tracing/ imports nothing else of src/",
    (f) => f.startsWith("src/tracing/"),
    (t) => t.startsWith("src/") && !t.startsWith("src/tracing/"),
  ],
  // The store's roles are interfaces in tasks/ (TaskStore, TaskLeases, ReplicaMessages); store/ implements them.
  [
    "tasks/ never imports store/ (it names the store's roles; store/ implements them)",
    (f) => f.startsWith("src/tasks/"),
    (t) => t.startsWith("src/store/"),
  ],
  [
    "config and the daemon never import cli/",
    (f) => f === "src/config.ts" || f.startsWith("src/settings/") || f === "src/node.ts",
    (t) => t.startsWith("src/cli/"),
  ],
  // The service is a library the CLI calls: it raises its own errors and the CLI gives them exit codes.
  ["service/ never imports cli/", (f) => f.startsWith("src/service/"), (t) => t.startsWith("src/cli/")],
  // Push delivery is handed its queue; which store keeps it is the composition root's choice.
  ["push/ never imports store/", (f) => f.startsWith("src/push/"), (t) => t.startsWith("src/store/")],
  // Ids and timestamps live at the bottom (src/clock.ts): an executor making ids does not reach into tasks/.
  ["executors/ never import tasks/", (f) => f.startsWith("src/executors/"), (t) => t.startsWith("src/tasks/")],
  ["src/clock.ts imports nothing of src/", (f) => f === "src/clock.ts", (t) => t.startsWith("src/")],
  ["src/deferred.ts imports nothing of src/", (f) => f === "src/deferred.ts", (t) => t.startsWith("src/")],
  ["src/reason.ts imports nothing of src/", (f) => f === "src/reason.ts", (t) => t.startsWith("src/")],
  // What client/ and executors/ share (the SSE reader) sits below both, in src/sse.ts.
  ["client/ never imports executors/", (f) => f.startsWith("src/client/"), (t) => t.startsWith("src/executors/")],
  ["src/sse.ts imports nothing of src/", (f) => f === "src/sse.ts", (t) => t.startsWith("src/")],
  // The runner is a coordinator above its parts (admission, running jobs, events sink, executions, questions,
  // outcome writer, lease keeper, shutdown): they are handed what they need and never reach back up to it.
  [
    "tasks/: the runner's parts never import task-runner.ts (only the tasks service, above it, does)",
    (f) => f.startsWith("src/tasks/") && f !== "src/tasks/task-service.ts",
    (t) => t === "src/tasks/task-runner",
  ],
  // Metrics watch every floor, server/ among them (NodeMetrics implements its RouterMetrics): no way back.
  ["server/ never imports metrics/", (f) => f.startsWith("src/server/"), (t) => t.startsWith("src/metrics/")],
  // A peer client's tracing is one module (call-tracing.ts): every binding's client sends and records the same.
  [
    "client/ reaches tracing/ only through client/call-tracing.ts",
    (f) => f.startsWith("src/client/") && f !== "src/client/call-tracing.ts",
    (t) => t.startsWith("src/tracing/"),
  ],
  // fleet/ builds on server/ (its listeners, its routes): the listeners are handed the fleet's pieces by node.ts.
  ["server/ never imports fleet/", (f) => f.startsWith("src/server/"), (t) => t.startsWith("src/fleet/")],
];

describe("import directions", () => {
  it("the scan sees the imports (a rule over nothing would pass for nothing)", () => {
    expect(SOURCES.length).toBeGreaterThan(50);
    expect(SOURCES.find((s) => s.file === "src/node.ts")?.imports).toContain("src/config");
  });

  it.each(RULES)("%s", (_rule, from, forbidden) => {
    const violations = SOURCES.filter((s) => from(s.file)).flatMap((s) =>
      s.imports.filter(forbidden).map((t) => `${s.file} -> ${t}`),
    );
    expect(violations).toEqual([]);
  });
});
