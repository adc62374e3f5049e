/**
 * The trace printer and link checker the cross-node tests use (test/helpers/trace-tree.ts): a tree drawn by
 * parent links and start times, every broken link named.
 */
import { describe, expect, it } from "vitest";
import { ancestors, linkProblems, traceTree, type TracedSpan } from "../helpers/trace-tree";

const T = "4bf92f3577b34da6a3ce929d0e0e4736";
function span(id: string, parent: string | undefined, name: string, startMs: number, more: Partial<TracedSpan> = {}) {
  const ns = (ms: number) => String(BigInt(1_700_000_000_000 + ms) * 1_000_000n);
  return {
    traceId: T,
    spanId: id.padStart(16, "0"),
    parentSpanId: parent?.padStart(16, "0"),
    name,
    kind: 3,
    startTimeUnixNano: ns(startMs),
    endTimeUnixNano: ns(startMs + 2),
    attributes: {},
    status: {},
    resource: { "service.name": "a2a-node" },
    ...more,
  } satisfies TracedSpan;
}

const client = { "service.name": "a2a-node", "process.command": "a2a-node send" };
const beta = { "service.name": "a2a-node", "service.instance.id": "beta" };
const whole = [
  span("5", "2", "a2a.v1.A2AService/SendMessage", 3, { kind: 2, resource: beta }),
  span("1", undefined, "a2a-node send", 0, { kind: 1, resource: client }),
  span("3", "1", "a2a GetTask", 20, { resource: client, attributes: { "a2a.task.id": "T1" } }),
  span("2", "1", "a2a SendMessage", 1, { resource: client, attributes: { "rpc.method": "SendMessage" } }),
  span("6", "5", "chat test-model", 4, {
    resource: beta,
    attributes: { "gen_ai.request.model": "test-model" },
    status: { code: 2 },
  }),
];

describe("traceTree", () => {
  it("draws children under their parents, in start order, with kind, sender and chosen attributes", () => {
    expect(traceTree(whole).replace(/\d+\.\d ms/g, "N ms")).toBe(
      [
        "a2a-node send  [internal, a2a-node send]  N ms",
        "  a2a SendMessage  [client, a2a-node send]  N ms  rpc.method=SendMessage",
        "    a2a.v1.A2AService/SendMessage  [server, beta]  N ms",
        "      chat test-model  [client, beta]  N ms  FAILED  gen_ai.request.model=test-model",
        "  a2a GetTask  [client, a2a-node send]  N ms  a2a.task.id=T1",
      ].join("\n"),
    );
  });

  it("marks a span whose parent was not received", () => {
    const orphan = span("9", "8", "lost child", 30);
    expect(traceTree([...whole, orphan])).toContain(
      `lost child  [client, a2a-node]  2.0 ms (parent ${"8".padStart(16, "0")} not received)`,
    );
  });
});

describe("linkProblems", () => {
  it("finds none in a whole trace", () => {
    expect(linkProblems(whole)).toEqual([]);
  });

  it("names a missing parent, a second root, a span received twice", () => {
    const problems = linkProblems([
      ...whole,
      span("9", "8", "lost child", 30),
      span("7", undefined, "another root", 31),
      whole[0]!,
    ]);
    expect(problems).toHaveLength(3);
    expect(problems.join("\n")).toMatch(/received twice/);
    expect(problems.join("\n")).toMatch(/2 roots: a2a-node send, another root/);
    expect(problems.join("\n")).toMatch(/lost child .* has parent 0+8, which is not in the trace/);
  });

  it("a trace without a root is a problem too", () => {
    expect(linkProblems([whole[0]!])).toContain("0 roots: none");
  });
});

describe("ancestors", () => {
  it("walks up to the root, nearest first", () => {
    expect(ancestors(whole, whole[4]!).map((s) => s.name)).toEqual([
      "a2a.v1.A2AService/SendMessage",
      "a2a SendMessage",
      "a2a-node send",
    ]);
    expect(ancestors(whole, whole[1]!)).toEqual([]);
  });
});
