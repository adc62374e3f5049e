/**
 * One caller's poison cannot cost other callers their acknowledged tasks (issue 13): the compiled node, real
 * TLS, a real SQLite home. A SendMessage whose metadata is nested tens of thousands of levels, just under the
 * body limit, arrives among 60 good ones sent at the same moment. The poison alone is refused (-32602); every
 * good one is answered COMPLETED, and every one of them is still there, with its answer, after the node is
 * killed with SIGKILL and started again on the same home.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { post, rpc, userMessage } from "../helpers/rpc";

const MAX_BODY = 256 * 1024;
const GOOD = 60;

let fleet: Fleet;
let alpha: TlsIdentity;
const nodes: ServedBinary[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  alpha = fleet.identity("alpha");
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  fleet?.cleanup();
});

async function serve(): Promise<ServedBinary> {
  const node = await serveBinary(fleet.homes.beta, [
    "--executor",
    "echo",
    "--max-body",
    String(MAX_BODY),
    "--max-concurrent",
    "64",
  ]);
  nodes.push(node);
  return node;
}

/** A SendMessage whose metadata is {"a":[[[...]]]}, nested as deep as fits in exactly `bytes` bytes. */
function poisonBody(bytes: number): string {
  const head = JSON.stringify({
    jsonrpc: "2.0",
    id: "poison",
    method: "SendMessage",
    params: { message: userMessage("poison") },
  }).slice(0, -2);
  const open = `${head},"metadata":{"a":`;
  const close = "}}}";
  const levels = Math.floor((bytes - open.length - close.length) / 2);
  const body = `${open}${"[".repeat(levels)}${"]".repeat(levels)}${close}`;
  return body + " ".repeat(bytes - body.length); // padded to the exact size with JSON whitespace
}

describe("a poison request among parallel good ones", () => {
  it("is refused alone with -32602; every good task is COMPLETED and survives kill -9 and a restart", async () => {
    const node = await serve();
    const poison = poisonBody(MAX_BODY - 64);
    expect(poison.length).toBe(MAX_BODY - 64);
    JSON.parse(poison); // well-formed: only its depth is wrong

    const texts = Array.from({ length: GOOD }, (_, i) => `good ${i} ${crypto.randomUUID()}`);
    const half = GOOD / 2;
    const sent = texts.map((t) => rpc(node.url, alpha, "SendMessage", { message: userMessage(t) }));
    // In the middle of the flood: half the good requests are on their way before it, half after.
    const poisoned = post(node.url, alpha, poison);
    const replies = await Promise.all([...sent.slice(0, half), poisoned, ...sent.slice(half)]);
    const poisonReply = replies.splice(half, 1)[0];

    expect(poisonReply.status, poisonReply.text.slice(0, 300)).toBe(200);
    // Refused before it is parsed, so its id is not known: null, as for any request whose id cannot be read.
    expect(poisonReply.body.id).toBeNull();
    expect(poisonReply.body.error?.code, poisonReply.text.slice(0, 300)).toBe(-32602);
    expect(poisonReply.body.error.message).toMatch(/nested deeper than 64 levels/);
    expect(poisonReply.body.error.data[0].reason).toBe("INVALID_PARAMS");

    const ids = new Map<string, string>();
    for (const [i, r] of replies.entries()) {
      expect(r.body?.error, r.text).toBeUndefined();
      const task = r.body.result.task;
      expect(task.status.state).toBe("TASK_STATE_COMPLETED");
      expect(task.artifacts[0].parts[0].text).toBe(texts[i]);
      ids.set(task.id, texts[i]);
    }
    expect(ids.size).toBe(GOOD);

    // Acknowledged means on disk: a crash right now loses none of them.
    await node.stop("SIGKILL");
    const again = await serve();
    for (const [id, text] of ids) {
      const r = await rpc(again.url, alpha, "GetTask", { id });
      expect(r.body?.error, r.text).toBeUndefined();
      expect(r.body.result.status.state).toBe("TASK_STATE_COMPLETED");
      expect(r.body.result.artifacts[0].parts[0].text).toBe(text);
    }
    const list = await rpc(again.url, alpha, "ListTasks", { pageSize: 100, historyLength: 0 });
    expect(list.body.result.totalSize).toBe(GOOD); // the poison left nothing behind
    expect(await again.stop("SIGTERM")).toBe(0);
  });
});
