import { describe, expect, it } from "vitest";
import { durableRatios, evaluateTargets, formatTable, type Row } from "../../scripts/bench/report";

// `npm run bench` judges a2a-node against issue 22's targets, each against a reference measured in the same run.
// These are the judgements on made-up rows: a target passes at its bound and fails just past it.
function row(over: Partial<Row> & Pick<Row, "server">): Row {
  return {
    concurrency: 32,
    newConnections: false,
    clientProcesses: 1,
    rounds: 1,
    requests: 1000,
    windowS: 1,
    rps: 1000,
    p50Ms: 1,
    p99Ms: 10,
    cpuUsPerRequest: 100,
    serverCpuPct: 50,
    clientCpuPct: 50,
    otherCpuPct: 0,
    errors: 0,
    ...over,
  };
}

const passing: Row[] = [
  row({ server: "a2a-node", rps: 3000, p99Ms: 10, cpuUsPerRequest: 60, peakRssMB: 110 }),
  row({ server: "sdk", rps: 1000, p99Ms: 10 }),
  row({ server: "bare", cpuUsPerRequest: 10 }),
  row({ server: "a2a-node", concurrency: 8, newConnections: true, rps: 250 }),
  row({ server: "sdk", concurrency: 8, newConnections: true, rps: 100 }),
];
const startup = { runsMs: [90, 100, 120], medianMs: 100 };

describe("bench targets", () => {
  it("pass at their bounds: 3× req/s, p99 equal, 6× CPU, 110 MB, 2.5× new connections, 100 ms", () => {
    const targets = evaluateTargets(passing, startup);
    expect(targets.map((t) => t.pass)).toEqual([true, true, true, true, true, true]);
    expect(targets.map((t) => t.measured)).toEqual([
      "3.00× (3000 vs 1000 req/s)",
      "10.0 vs 10.0 ms",
      "6.00× (60 vs 10 µs)",
      "110.0 MB",
      "2.50× (250 vs 100 req/s)",
      "100 ms median (runs: 90, 100, 120 ms)",
    ]);
  });

  it("fail just past each bound", () => {
    const worse = passing.map((r) =>
      r.server !== "a2a-node"
        ? r
        : r.newConnections
          ? { ...r, rps: 249 }
          : { ...r, rps: 2999, p99Ms: 10.1, cpuUsPerRequest: 61, peakRssMB: 110.1 },
    );
    const targets = evaluateTargets(worse, { runsMs: [101], medianMs: 101 });
    expect(targets.map((t) => t.pass)).toEqual([false, false, false, false, false, false]);
  });

  it("say 'not measured' for what the run left out, and ignore broken rows", () => {
    const onlyNode = [row({ server: "a2a-node" }), row({ server: "sdk", errors: 3 })];
    const targets = evaluateTargets(onlyNode, undefined);
    expect(targets.every((t) => t.pass === null && t.measured === "not measured")).toBe(true);
  });

  it("mark the new-connection rows in the table", () => {
    const table = formatTable(passing);
    expect(table.split("\n").filter((l) => / 8 new /.test(l))).toHaveLength(2);
    expect(table).toMatch(/^a2a-node \(SQLite\)\s+32\s+3000 /m);
  });
});

describe("durable against durable", () => {
  const lines = (rows: Row[]) => durableRatios(rows)?.split("\n") ?? [];

  it("passes at 3× the durable SDK's req/s with its p99, and fails just past either bound", () => {
    expect(lines([row({ server: "a2a-node-postgres", rps: 300 }), row({ server: "sdk-postgres", rps: 100 })])).toEqual([
      expect.stringMatching(
        /^PASS {2}3\.00× req\/s {2}a2a-node \(Postgres\) 300 vs @a2a-js\/sdk \(Postgres\) 100; p99 10\.0 vs 10\.0 ms/,
      ),
    ]);
    expect(
      lines([row({ server: "a2a-node-postgres", rps: 299 }), row({ server: "sdk-postgres", rps: 100 })])[0],
    ).toMatch(/^FAIL {2}2\.99×/);
    expect(
      lines([
        row({ server: "a2a-node-fsync", rps: 900, p99Ms: 10.1 }),
        row({ server: "sdk-sqlite-fsync", rps: 100 }),
      ])[0],
    ).toMatch(/^FAIL {2}9\.00×.*p99 10\.1 vs 10\.0 ms .*survives a power loss/);
  });

  it("pairs each store with the same store and level, and says what syncing every commit costs, unjudged", () => {
    const all = lines([
      row({ server: "a2a-node", rps: 1200 }),
      row({ server: "a2a-node-fsync", rps: 1000 }),
      row({ server: "sdk-sqlite", rps: 300 }),
      row({ server: "sdk-sqlite-fsync", rps: 50 }),
      row({ server: "sdk", rps: 5000 }), // the in-memory SDK is not durable: in no pair
    ]);
    expect(all.map((l) => l.slice(0, 12))).toEqual(["PASS  4.00× ", "PASS  20.00×", "      1.20× ", "      6.00× "]);
    expect(all[0]).toContain("@a2a-js/sdk (SQLite) 300");
    expect(all[1]).toContain("@a2a-js/sdk (SQLite, fsync) 50");
  });

  it("leaves out pairs with a side missing, broken, or measured with a new connection per request", () => {
    expect(durableRatios([row({ server: "a2a-node-postgres", rps: 300 })])).toBeUndefined();
    expect(
      durableRatios([row({ server: "a2a-node-postgres" }), row({ server: "sdk-postgres", errors: 1 })]),
    ).toBeUndefined();
    expect(
      durableRatios([
        row({ server: "a2a-node-postgres", concurrency: 32, newConnections: true }),
        row({ server: "sdk-postgres" }),
      ]),
    ).toBeUndefined();
  });
});
