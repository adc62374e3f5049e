/**
 * ListTasks bounded in bytes, end to end: the compiled binary with --max-list-bytes, the echo executor, raw
 * JSON-RPC over mutual TLS. Every response body stays within the budget plus a small envelope, the pages
 * hold every task once, and a task too large for a listing comes alone, cut, with its note.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { rpc, userMessage, type RpcReply } from "../helpers/rpc";

const BUDGET = 65_536;
/** The JSON-RPC envelope and the page's own fields (nextPageToken, pageSize, totalSize) around the tasks. */
const ENVELOPE = 1024;

let fleet: Fleet;
let who: TlsIdentity;
let node: ServedBinary;

function result(r: RpcReply): any {
  expect(r.status, r.text).toBe(200);
  expect(r.body?.error, r.text).toBeUndefined();
  return r.body.result;
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha"]);
  who = fleet.identity("alpha");
  node = await serveBinary(fleet.homes.alpha, ["--executor", "echo", "--max-list-bytes", String(BUDGET)]);
});
afterAll(async () => {
  await node?.stop("SIGKILL").catch(() => undefined);
  fleet?.cleanup();
});

describe("ListTasks over a node with --max-list-bytes 65536", () => {
  it("answers every page within the budget plus the envelope, every task once, the one too large alone and cut", async () => {
    // Echo tasks hold their text twice (the message in history, the artifact): 12 of ~24 KB and one of ~280 KB
    // (the padding "é" is two bytes).
    const sent: string[] = [];
    for (let i = 0; i < 13; i++) {
      const size = i === 6 ? 70_000 : 6_000;
      const t = result(
        await rpc(node.url, who, "SendMessage", {
          message: userMessage(`${i} `.padEnd(size, "é")),
          configuration: { historyLength: 0 },
        }),
      ).task;
      expect(t.status.state).toBe("TASK_STATE_COMPLETED");
      sent.push(t.id);
    }
    const big = sent[6];

    const pages: any[] = [];
    let pageToken: string | undefined;
    do {
      const r = await rpc(node.url, who, "ListTasks", { includeArtifacts: true, ...(pageToken ? { pageToken } : {}) });
      expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(BUDGET + ENVELOPE);
      const page = result(r);
      expect(Buffer.byteLength(JSON.stringify(page.tasks))).toBeLessThanOrEqual(BUDGET);
      expect(page.totalSize).toBe(13);
      pages.push(page);
      pageToken = page.nextPageToken || undefined;
    } while (pageToken);

    const listed = pages.flatMap((p) => p.tasks.map((t: any) => t.id));
    expect(listed).toEqual([...sent].reverse());
    expect(pages.length).toBeGreaterThan(4);
    expect(pages.some((p) => p.tasks.length > 1)).toBe(true);
    const cut = pages.find((p) => p.tasks.some((t: any) => t.id === big));
    expect(cut.tasks).toHaveLength(1);
    expect(cut.tasks[0].artifacts).toBeUndefined();
    expect(cut.tasks[0].history).toBeUndefined();
    expect(cut.tasks[0].metadata["a2a-node/omitted"]).toEqual({
      parts: ["artifacts", "history"],
      taskBytes: expect.any(Number),
      maxListBytes: BUDGET,
      reason: expect.stringContaining("GetTask"),
    });
    for (const p of pages)
      for (const t of p.tasks.filter((t: any) => t.id !== big)) {
        expect(t.metadata).toBeUndefined();
        expect(t.artifacts[0].parts[0].text).toBe(t.history[0].parts[0].text);
      }

    // GetTask returns it whole.
    const whole = result(await rpc(node.url, who, "GetTask", { id: big }));
    expect(whole.artifacts[0].parts[0].text).toBe("6 ".padEnd(70_000, "é"));
    expect(whole.metadata).toBeUndefined();

    // Without artifacts and history every task is small: one page of all thirteen.
    const plain = result(await rpc(node.url, who, "ListTasks", { historyLength: 0 }));
    expect(plain.tasks.map((t: any) => t.id)).toEqual([...sent].reverse());
    expect(plain.nextPageToken).toBe("");
  });
});

describe("the max_list_bytes setting", () => {
  it("comes from A2A_NODE_MAX_LIST_BYTES, and a flag out of range is a usage error naming the flag", async () => {
    const check = await runBinary(["--home", fleet.homes.alpha, "serve", "--check", "--json"], {
      A2A_NODE_MAX_LIST_BYTES: "100000",
    });
    expect(check.code, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({
      maxListBytes: 100_000,
      sources: { maxListBytes: "A2A_NODE_MAX_LIST_BYTES" },
    });
    const bad = await runBinary(["--home", fleet.homes.alpha, "serve", "--max-list-bytes", "1000"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-list-bytes must be a whole number 16384-268435456 (got 1000)");
  });
});
