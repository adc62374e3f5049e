/**
 * The trace a client command starts (src/cli/command-trace.ts), through runCli against real nodes in-process:
 * `send --verbose` names it on stderr, `--json` carries it, every command gets a trace of its own, and the
 * trace id is one the W3C format allows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { isValidTraceId } from "../../src/tracing/trace-context";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let beta: RunningNode;
const quiet = createLogger(() => {}, "warn");

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(["--home", fleet.homes.alpha!, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

const TRACE_LINE = /^trace ([0-9a-f]{32}) \(this home exports no spans: no otlp_endpoint set\)$/m;

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  beta = await startNode(fleet.homes.beta!, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "echo" }, quiet);
  expect((await cli("peers", "add", "beta", beta.url)).code).toBe(0);
});
afterAll(async () => {
  await beta?.stop();
  fleet?.cleanup();
});

describe("send's trace id", () => {
  it("--verbose prints it on stderr, one line, before anything else; --json carries the same id", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "traced", "--wait", "--json", "--verbose");
    expect(r.code, r.err).toBe(0);
    expect(r.err.split("\n")[0]).toMatch(TRACE_LINE);
    expect(r.err.split("\n").filter((l) => l.startsWith("trace "))).toHaveLength(1);
    const id = TRACE_LINE.exec(r.err)![1]!;
    expect(isValidTraceId(id)).toBe(true);
    const task = JSON.parse(r.out);
    expect(task.traceId).toBe(id);
    expect(task).toMatchObject({
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "traced" }] }],
    });
  });

  it("each command starts a trace of its own", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const r = await cli("send", "--agent", "beta", "--task", `again ${i}`, "--json");
      expect(r.code, r.err).toBe(0);
      ids.add(JSON.parse(r.out).traceId);
    }
    expect(ids.size).toBe(3);
    for (const id of ids) expect(isValidTraceId(id)).toBe(true);
  });

  it("--stream --json: the items stay bare stream items; --verbose names the trace on stderr", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "streamed", "--stream", "--json", "--verbose");
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(TRACE_LINE);
    const lines = r.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(Object.keys(line)).toHaveLength(1);
    expect(lines[0].task.id).toMatch(/^[0-9A-Z]{26}$/);
  });

  it("without --verbose and --json, the output is what it was: no trace line, no trace id", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "plain", "--wait");
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe("plain\n");
    expect(r.err).not.toMatch(/trace/);
    const bare = await cli("send", "--agent", "beta", "--task", "plain");
    expect(bare.out).toMatch(/^[0-9A-Z]{26}\t(submitted|working|completed)\n$/);
  });

  it("status --json prints the bare Task (only send adds the trace id)", async () => {
    const sent = JSON.parse((await cli("send", "--agent", "beta", "--task", "look", "--wait", "--json")).out);
    const s = await cli("status", "--agent", "beta", "--task-id", sent.id, "--json");
    expect(s.code, s.err).toBe(0);
    expect(JSON.parse(s.out).traceId).toBeUndefined();
    expect(JSON.parse(s.out).id).toBe(sent.id);
  });
});
