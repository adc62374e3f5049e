/**
 * One caller cannot exhaust the node's memory or disk, nor fan one message out to thousands of webhooks: the
 * compiled binary, real mutual TLS, a real SQLite home, the limits as their settings set them.
 * - push configs: max_push_configs_per_task (default 10) and max_push_configs_per_caller, refused naming them;
 * - storage: max_caller_tasks and max_caller_bytes refused with RESOURCE_EXHAUSTED (HTTP 429 over HTTP+JSON),
 *   the free-space floor refusing the caller holding the most first, then everyone, and saying so in
 *   /health/ready, the metrics and the log;
 * - memory: a caller that asks for a large task and does not read holds at most its answer budget; its next
 *   request waits for it to read (and goes once it does), or is refused after 10 s; other callers are served.
 */
import { statfsSync } from "node:fs";
import { once } from "node:events";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { scrape } from "../helpers/metrics";
import { post, rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let alpha: TlsIdentity;
let gamma: TlsIdentity;
const nodes: ServedBinary[] = [];

async function serve(home: string, args: string[]): Promise<{ node: ServedBinary; admin: string }> {
  const n = await serveBinary(home, ["--executor", "echo", "--admin-port", "0", ...args]);
  nodes.push(n);
  const line = await n.waitForLine({ msg: /^admin port open on loopback/ });
  return { node: n, admin: line.url as string };
}

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha", "gamma", "pushes", "quotas", "floor", "flooded", "answers"]);
  alpha = fleet.identity("alpha");
  gamma = fleet.identity("gamma");
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  fleet?.cleanup();
});

/** An HTTP+JSON call over mTLS (A2A-Version 1.0). */
async function rest(url: string, who: TlsIdentity, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body: body === undefined ? undefined : JSON.stringify(body),
    tls: { cert: who.cert, key: who.key, ca: who.ca },
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as any };
}

describe("push configs", () => {
  it("takes 10 configs on one task by default and refuses the 11th naming max_push_configs_per_task; a caller's own cap names max_push_configs_per_caller", async () => {
    const { node } = await serve(fleet.homes.pushes, [
      "--push-allow",
      "127.0.0.1",
      "--max-push-configs-per-caller",
      "12",
    ]);
    const task = (await rpc(node.url, alpha, "SendMessage", { message: userMessage("hooks") })).body.result.task;
    const create = (taskId: string, i: number) =>
      rpc(node.url, alpha, "CreateTaskPushNotificationConfig", {
        taskId,
        id: `c${i}`,
        url: `http://127.0.0.1:9/hook/${i}`,
      });
    for (let i = 0; i < 10; i++) expect((await create(task.id, i)).body.result.id).toBe(`c${i}`);
    const over = (await create(task.id, 10)).body.error;
    expect(over.code).toBe(-32602);
    expect(over.message).toContain(
      "the task already has 10 push notification configs, this node's limit per task (max_push_configs_per_task = 10)",
    );
    // Replacing one is no new one.
    expect((await create(task.id, 3)).body.result.id).toBe("c3");
    // Over HTTP+JSON: 400 INVALID_ARGUMENT.
    const viaRest = await rest(node.url, alpha, "POST", `/tasks/${task.id}/pushNotificationConfigs`, {
      id: "r1",
      url: "http://127.0.0.1:9/r",
    });
    expect(viaRest.status).toBe(400);
    expect(viaRest.body.error.message).toContain("max_push_configs_per_task");
    // Two more on another task reach alpha's cap of 12; the next is refused as a quota.
    const other = (await rpc(node.url, alpha, "SendMessage", { message: userMessage("more hooks") })).body.result.task;
    for (let i = 0; i < 2; i++) await create(other.id, i);
    const quota = (await create(other.id, 2)).body.error;
    expect(quota.code).toBe(-32603);
    expect(quota.data[0]).toMatchObject({
      reason: "RESOURCE_EXHAUSTED",
      metadata: { limit: "max_push_configs_per_caller" },
    });
    expect(quota.message).toContain(
      "alpha already has 12 push notification configs on this node, its limit (max_push_configs_per_caller = 12)",
    );
    // The same with a SendMessage that brings its own config: refused, and no task is left running without it.
    const withHook = await rpc(node.url, alpha, "SendMessage", {
      message: userMessage("one more"),
      configuration: { taskPushNotificationConfig: { url: "http://127.0.0.1:9/x" } },
    });
    expect(withHook.body.error?.data[0].metadata.limit).toBe("max_push_configs_per_caller");
    // gamma has a cap of its own.
    const mine = (await rpc(node.url, gamma, "SendMessage", { message: userMessage("gamma's") })).body.result.task;
    expect(
      (
        await rpc(node.url, gamma, "CreateTaskPushNotificationConfig", {
          taskId: mine.id,
          id: "g",
          url: "http://127.0.0.1:9/g",
        })
      ).body.result.id,
    ).toBe("g");
  });
});

describe("storage quotas", () => {
  it("refuses a caller's tasks past max_caller_tasks and max_caller_bytes with RESOURCE_EXHAUSTED (HTTP 429), others go on, and counts the refusals", async () => {
    const { node, admin } = await serve(fleet.homes.quotas, [
      "--max-caller-tasks",
      "3",
      "--max-caller-bytes",
      "200000",
    ]);
    for (let i = 0; i < 3; i++)
      expect(
        (await rpc(node.url, alpha, "SendMessage", { message: userMessage(`t${i}`) })).body.result.task.status.state,
      ).toBe("TASK_STATE_COMPLETED");
    const refused = await rpc(node.url, alpha, "SendMessage", { message: userMessage("t3") });
    expect(refused.body.error.code).toBe(-32603);
    expect(refused.body.error.data[0]).toMatchObject({
      reason: "RESOURCE_EXHAUSTED",
      metadata: { limit: "max_caller_tasks", retry: "later" },
    });
    expect(refused.body.error.message).toContain(
      "alpha has 3 tasks stored on this node, its quota (max_caller_tasks = 3)",
    );
    const viaRest = await rest(node.url, alpha, "POST", "/message:send", { message: userMessage("t4") });
    expect(viaRest.status).toBe(429);
    expect(viaRest.body.error.status).toBe("RESOURCE_EXHAUSTED");
    // gamma: about 90,000 bytes a task (its message and the echo), so the third passes 200,000.
    for (let i = 0; i < 2; i++)
      expect(
        (await rpc(node.url, gamma, "SendMessage", { message: userMessage("g".repeat(45_000)) })).body.result,
      ).toBeDefined();
    const bytes = await rpc(node.url, gamma, "SendMessage", { message: userMessage("g".repeat(45_000)) });
    expect(bytes.body.error.data[0].metadata.limit).toBe("max_caller_bytes");
    const m = await scrape(admin);
    expect(m.value('a2a_node_storage_refused_total{limit="max_caller_tasks"}')).toBe(2);
    expect(m.value('a2a_node_storage_refused_total{limit="max_caller_bytes"}')).toBe(1);
    expect(m.value('a2a_node_storage_refused_total{limit="min_free_disk"}')).toBe(0);
  });
});

describe("the free-space floor", () => {
  const freeNow = (dir: string) => {
    const s = statfsSync(dir);
    return Number(s.bavail) * Number(s.bsize);
  };

  it("below min_free_disk refuses the caller holding the most, takes the others, and says so in /health/ready, the metrics and the log", async () => {
    // A floor half again the free space: below it, but not below half of it.
    const floor = Math.round(freeNow(fleet.homes.floor) * 1.5);
    const { node, admin } = await serve(fleet.homes.floor, ["--min-free-disk", String(floor)]);
    // alpha stores the most, and the floor names it once it has read who that is.
    expect(
      (await rpc(node.url, alpha, "SendMessage", { message: userMessage("a".repeat(50_000)) })).body.result,
    ).toBeDefined();
    await node.waitForLine({ msg: /^free disk space is below min_free_disk/, level: "warn", peer: "alpha" });
    const refused = await rpc(node.url, alpha, "SendMessage", { message: userMessage("more") });
    expect(refused.body.error.data[0]).toMatchObject({
      reason: "RESOURCE_EXHAUSTED",
      metadata: { limit: "min_free_disk" },
    });
    expect(refused.body.error.message).toContain(`less than its floor of ${floor} (min_free_disk)`);
    expect(
      (await rpc(node.url, gamma, "SendMessage", { message: userMessage("small") })).body.result.task.status.state,
    ).toBe("TASK_STATE_COMPLETED");
    const ready = await fetch(`${admin}/health/ready`);
    expect(ready.status).toBe(503);
    const report = (await ready.json()) as any;
    expect(report.failed).toEqual(["storage"]);
    expect(report.checks.storage).toMatchObject({
      ok: false,
      refusing: "heaviest",
      heaviest: "alpha",
      minFreeDisk: floor,
    });
    const m = await scrape(admin);
    expect(m.value("a2a_node_disk_floor_refusing")).toBe(1);
    expect(m.value("a2a_node_disk_free_bytes")).toBeGreaterThan(floor / 2);
    expect(m.value('a2a_node_storage_refused_total{limit="min_free_disk"}')).toBe(1);
  });

  it("below half of it refuses every caller", async () => {
    const floor = Math.round(freeNow(fleet.homes.flooded) * 3);
    const { node, admin } = await serve(fleet.homes.flooded, ["--min-free-disk", String(floor)]);
    for (const who of [alpha, gamma]) {
      const r = await rpc(node.url, who, "SendMessage", { message: userMessage("no room") });
      expect(r.body.error.message).toContain("it takes no new tasks or messages from any caller");
    }
    const report = (await (await fetch(`${admin}/health/ready`)).json()) as any;
    expect(report.checks.storage).toMatchObject({ ok: false, refusing: "all" });
    expect((await scrape(admin)).value("a2a_node_disk_floor_refusing")).toBe(2);
    expect(
      node.lines().some((l) => l.level === "error" && /^free disk space is below half of min_free_disk/.test(l.msg)),
    ).toBe(true);
  });
});

describe("answers to a caller that does not read", () => {
  let node: ServedBinary;
  let admin: string;
  let big: { id: string };
  /** A GetTask on a connection of its own whose answer is not read until read() is called. */
  async function stalledGetTask(
    url: string,
    who: TlsIdentity,
    taskId: string,
  ): Promise<{ socket: TLSSocket; read(): Promise<string> }> {
    const { port } = new URL(url);
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: Number(port),
      cert: who.cert,
      key: who.key,
      ca: who.ca,
      servername: "answers",
    });
    socket.on("error", () => {});
    await once(socket, "secureConnect");
    socket.pause();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: taskId } });
    socket.write(
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    return {
      socket,
      read: () =>
        new Promise((resolve) => {
          const chunks: Buffer[] = [];
          let got = 0;
          let want = Infinity;
          socket.on("data", (d: Buffer) => {
            chunks.push(d);
            got += d.length;
            if (want === Infinity) {
              const all = Buffer.concat(chunks);
              const end = all.indexOf("\r\n\r\n");
              if (end !== -1)
                want = end + 4 + Number(/content-length: (\d+)/i.exec(all.toString("latin1", 0, end))![1]);
            }
            if (got >= want) resolve(Buffer.concat(chunks).toString("utf8"));
          });
          socket.resume();
        }),
    };
  }

  it("holds what one caller has not read up to its budget: its next request waits until it reads, another caller is served meanwhile", async () => {
    // A task of about 13 MB (a 12 MB message, and its echo cut at output_cap): more than the kernel's socket
    // buffers take.
    ({ node, admin } = await serve(fleet.homes.answers, [
      "--max-body",
      String(16 * 1024 * 1024),
      "--answer-bytes-per-caller",
      String(1024 * 1024),
    ]));
    const text = "z".repeat(12 * 1024 * 1024);
    big = (
      await post(
        node.url,
        alpha,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: { message: userMessage(text), configuration: { historyLength: 0 } },
        }),
      )
    ).body.result.task;
    const mine = (await rpc(node.url, gamma, "SendMessage", { message: userMessage("gamma's task") })).body.result.task;

    const first = await stalledGetTask(node.url, alpha, big.id);
    // The answer is held for alpha while it does not read: far more than the budget.
    let held = 0;
    while (held < 1024 * 1024) held = (await scrape(admin)).value("a2a_node_answer_bytes_held") ?? 0;
    // gamma is not held up by alpha.
    expect((await rpc(node.url, gamma, "GetTask", { id: mine.id })).body.result.id).toBe(mine.id);
    // alpha's next request waits for alpha to read; once it does, it is answered.
    const second = rpc(node.url, alpha, "GetTask", { id: big.id, historyLength: 0 });
    const answer = await first.read();
    expect(answer).toContain(`"id":"${big.id}"`);
    expect(answer.length).toBeGreaterThan(12 * 1024 * 1024);
    expect((await second).body.result.id).toBe(big.id);
    first.socket.destroy();
  });

  it("refuses the next request with 429 RESOURCE_EXHAUSTED naming answer_bytes_per_caller when the caller does not read within 10 s", async () => {
    const stalled = await stalledGetTask(node.url, alpha, big.id);
    let held = 0;
    while (held < 1024 * 1024) held = (await scrape(admin)).value("a2a_node_answer_bytes_held") ?? 0;
    const refused = await rpc(node.url, alpha, "GetTask", { id: big.id });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body.error.data[0]).toMatchObject({
      reason: "RESOURCE_EXHAUSTED",
      metadata: { limit: "answer_bytes_per_caller" },
    });
    expect(refused.body.error.message).toContain("answers to alpha that it has not read hold");
    stalled.socket.destroy();
  }, 30_000);
});
