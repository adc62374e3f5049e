/**
 * What an operator sees of a running node (the compiled binary, real TLS, a real SQLite home): the metrics
 * move with the work done and the connections refused, the admin port serves health and metrics and nothing
 * of A2A, on loopback only; the log is JSON lines with a line per task that names it but never says what it
 * says; the rate limit answers 429 with Retry-After; queue depth and open streams follow running work.
 */
import { createConnection } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { scrape } from "../helpers/metrics";
import { get, post, rpc, userMessage } from "../helpers/rpc";
import { openSse } from "../helpers/sse";
import { SCALAR_PATH, SCALAR_SHA256 } from "../../src/server/openapi-page";

let fleet: Fleet;
let alpha: TlsIdentity;
let gamma: TlsIdentity;
let node: ServedBinary;
let admin: string;
const nodes: ServedBinary[] = [];
const models: GatedModel[] = [];

async function serve(home: string, args: string[]): Promise<{ node: ServedBinary; admin: string }> {
  const n = await serveBinary(home, ["--admin-port", "0", ...args]);
  nodes.push(n);
  const line = await n.waitForLine({ msg: /^admin port open on loopback/ });
  return { node: n, admin: line.url as string };
}

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha", "gamma", "limited", "busy"]);
  alpha = fleet.identity("alpha");
  gamma = fleet.identity("gamma");
  ({ node, admin } = await serve(fleet.homes.beta, ["--executor", "echo", "--log-refusals-per-minute", "1000"]));
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  for (const m of models) m.stop();
  fleet?.cleanup();
});

const SECRET = `the launch code is ${crypto.randomUUID()}`;

describe("metrics", () => {
  it("count a task: accepted, finished COMPLETED with its duration and the executor's, its request, the stored state", async () => {
    const reply = await rpc(node.url, alpha, "SendMessage", { message: userMessage(SECRET) });
    expect(reply.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    const m = await scrape(admin);
    expect(m.value('a2a_node_tasks_accepted_total{arrival="new"}')).toBe(1);
    expect(m.value('a2a_node_task_duration_seconds_count{state="TASK_STATE_COMPLETED"}')).toBe(1);
    expect(m.value('a2a_node_task_duration_seconds_bucket{state="TASK_STATE_COMPLETED",le="+Inf"}')).toBe(1);
    expect(m.value('a2a_node_task_duration_seconds_count{state="TASK_STATE_FAILED"}')).toBe(0);
    expect(m.value('a2a_node_executor_duration_seconds_count{state="TASK_STATE_COMPLETED"}')).toBe(1);
    expect(m.value('a2a_node_rpc_request_duration_seconds_count{method="SendMessage"}')).toBe(1);
    expect(m.value('a2a_node_tasks{state="TASK_STATE_COMPLETED"}')).toBe(1);
    expect(m.value("a2a_node_tasks_running")).toBe(0);
    expect(m.value("a2a_node_tasks_queued")).toBe(0);
    expect(m.value("a2a_node_sse_streams")).toBe(0);
    expect(m.value('a2a_node_build_info{version="0.1.0",executor="echo"}')).toBe(1);
    expect(m.value("a2a_node_uptime_seconds")).toBeGreaterThanOrEqual(0);
    for (const p of [
      "process_resident_memory_bytes",
      "process_open_fds",
      "process_max_fds",
      "process_cpu_seconds_total",
      "process_start_time_seconds",
    ])
      expect(m.value(p), p).toBeGreaterThan(0);

    // A second task and an error answer move them again.
    await rpc(node.url, alpha, "SendMessage", { message: userMessage("another") });
    const notFound = await rpc(node.url, alpha, "GetTask", { id: "no-such-task" });
    expect(notFound.body.error.code).toBe(-32001);
    await rpc(node.url, alpha, "NoSuchMethod", {});
    // The HTTP+JSON binding is counted by the same operation names.
    const rest = await fetch(`${node.url}/tasks/no-such-task`, {
      headers: { "a2a-version": "1.0" },
      tls: alpha,
    } as RequestInit);
    expect(rest.status).toBe(404);
    const after = await scrape(admin);
    expect(after.value('a2a_node_tasks_accepted_total{arrival="new"}')).toBe(2);
    expect(after.value('a2a_node_rpc_request_duration_seconds_count{method="SendMessage"}')).toBe(2);
    expect(after.value('a2a_node_rpc_request_duration_seconds_count{method="GetTask"}')).toBe(2);
    // An unknown method is counted under one label: a client cannot make new series by inventing methods.
    expect(after.value('a2a_node_rpc_request_duration_seconds_count{method="unknown"}')).toBe(1);
    expect(after.text).not.toContain("NoSuchMethod");
    expect(after.value('a2a_node_rpc_errors_total{code="-32001"}')).toBe(2);
    expect(after.value('a2a_node_rpc_errors_total{code="-32601"}')).toBe(1);
  });

  it("count every refused connection by reason, and the log names the same reason", async () => {
    const before = await scrape(admin);
    expect(before.value('a2a_node_connections_refused_total{reason="not_tls"}')).toBe(0);
    // A client of another fleet: refused in the handshake.
    const mallory = await fleet.foreign("mallory");
    await expect(get(`${node.url}/health`, mallory)).rejects.toThrow();
    const line = await node.waitForLine({ msg: "refused a connection" });
    // Plain HTTP on the TLS port.
    await new Promise<void>((resolve) => {
      const s = createConnection({ host: "127.0.0.1", port: node.port }, () =>
        s.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
      );
      s.on("close", () => resolve());
      s.on("error", () => resolve());
    });
    await node.waitForLine({ msg: "refused a connection", kind: "not_tls" });
    const after = await scrape(admin);
    expect(after.sum("a2a_node_connections_refused_total") - before.sum("a2a_node_connections_refused_total")).toBe(2);
    expect(after.value(`a2a_node_connections_refused_total{reason="${line.kind}"}`)).toBe(
      1 + (line.kind === "not_tls" ? 1 : 0),
    );
    expect(after.value('a2a_node_connections_refused_total{reason="not_tls"}')).toBeGreaterThanOrEqual(1);
  });

  it("count the requests the HTTP loop refuses itself, by status: malformed (400), too large (413)", async () => {
    const before = await scrape(admin);
    expect(before.value('a2a_node_http_requests_refused_total{status="400"}')).toBe(0);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect(
        { host: "127.0.0.1", port: node.port, cert: alpha.cert, key: alpha.key, ca: alpha.ca, servername: "beta" },
        () => s.write("NOT AN HTTP REQUEST\r\n\r\n"),
      );
      let got = "";
      s.on("data", (d) => (got += d.toString()));
      s.on("close", () => resolve(got));
      s.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const big = await post(
      node.url,
      alpha,
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { pad: "x".repeat(1_100_000) } }),
    );
    expect(big.status).toBe(413);
    const after = await scrape(admin);
    expect(after.value('a2a_node_http_requests_refused_total{status="400"}')).toBe(1);
    expect(after.value('a2a_node_http_requests_refused_total{status="413"}')).toBe(1);
    expect(after.value('a2a_node_http_requests_refused_total{status="408"}')).toBe(0);
  });

  it("on the mTLS port /metrics and /health/* need a fleet certificate like everything else", async () => {
    const ok = await get(`${node.url}/metrics`, alpha);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(ok.text).toContain("a2a_node_tasks_accepted_total");
    for (const path of ["/metrics", "/health/live", "/health/ready"])
      await expect(get(`${node.url}${path}`, undefined)).rejects.toThrow();
    expect((await get(`${node.url}/health/live`, alpha)).body).toMatchObject({ status: "ok" });
    expect((await get(`${node.url}/health`, alpha)).body).toMatchObject({
      status: "ok",
      name: "beta",
      caller: "alpha",
    });
  });
});

describe("the admin port", () => {
  it("serves health and metrics over plain HTTP without a certificate", async () => {
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const live = await fetch(`${admin}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ status: "ok" });
    const ready = await fetch(`${admin}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      failed: [],
      checks: { database: { ok: true }, certificate: { ok: true }, model: { ok: true } },
    });
    const health = (await (await fetch(`${admin}/health`)).json()) as { caller?: string };
    expect(health).toMatchObject({ status: "ok", name: "beta" });
    expect(health.caller).toBeUndefined();
  });

  it("serves nothing of A2A: no JSON-RPC, no agent card, no OpenAPI", async () => {
    const rpcCall = await fetch(`${admin}/`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    });
    expect(rpcCall.status).toBe(404);
    expect(await rpcCall.text()).toContain(
      "the admin port serves only GET /health, /health/live, /health/ready, /metrics",
    );
    for (const path of ["/.well-known/agent-card.json", "/openapi", "/openapi/json", "/a2a/rpc"])
      expect((await fetch(`${admin}${path}`)).status, path).toBe(404);
    expect(
      (await fetch(`${admin}/metrics`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }))
        .status,
    ).toBe(404);
  });

  it("listens on 127.0.0.1 only, and refuses a foreign Host (DNS rebinding) or Origin", async () => {
    const port = Number(new URL(admin).port);
    // 127.0.0.2 is this machine too, but not the address the port is bound to.
    const err = await new Promise<string>((resolve) => {
      const s = createConnection({ host: "127.0.0.2", port }, () => {
        s.destroy();
        resolve("connected");
      });
      s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(err).toBe("ECONNREFUSED");
    expect((await fetch(`${admin}/metrics`, { headers: { host: `attacker.example:${port}` } })).status).toBe(400);
    expect((await fetch(`${admin}/metrics`, { headers: { origin: "https://attacker.example" } })).status).toBe(403);
  });

  it("is off unless asked for", async () => {
    const plain = await serveBinary(fleet.homes.gamma, ["--executor", "echo"]);
    nodes.push(plain);
    expect(plain.lines().some((l) => /admin port/.test(l.msg))).toBe(false);
    expect(await plain.stop()).toBe(0);
  });
});

describe("the log", () => {
  it("is JSON lines on stdout, nothing on stderr; each task line names the task, its context and the peer", async () => {
    const lines = node.lines(); // throws if any line was not one JSON object with time, level and msg
    expect(lines.length).toBeGreaterThan(4);
    expect(node.stderr()).toBe("");
    const accepted = lines.filter((l) => l.msg === "task accepted");
    const finished = lines.filter((l) => l.msg === "task finished");
    expect(accepted).toHaveLength(2);
    expect(finished).toHaveLength(2);
    for (const a of accepted) {
      expect(a).toMatchObject({
        level: "info",
        task_id: expect.any(String),
        context_id: expect.any(String),
        peer: "alpha",
      });
      const f = finished.find((x) => x.task_id === a.task_id);
      expect(f).toMatchObject({
        level: "info",
        context_id: a.context_id,
        peer: "alpha",
        state: "completed",
        duration_ms: expect.any(Number),
        executor_ms: expect.any(Number),
      });
    }
  });

  it("never carries what a task says, nor any key", async () => {
    const all = node.log();
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain("launch code");
    expect(all).not.toMatch(/PRIVATE KEY/);
  });
});

describe("the per-peer rate limit (--rate-limit-per-second 1 --rate-limit-burst 2)", () => {
  it("refuses a peer past its burst with HTTP 429, Retry-After and a JSON-RPC error saying when to retry; other peers go on", async () => {
    const { node: limited, admin: limitedAdmin } = await serve(fleet.homes.limited, [
      "--executor",
      "echo",
      "--rate-limit-per-second",
      "1",
      "--rate-limit-burst",
      "2",
    ]);
    const call = (who: TlsIdentity) => rpc(limited.url, who, "GetTask", { id: "nothing" });
    const first = await call(alpha);
    const second = await call(alpha);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await call(alpha);
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("1");
    expect(third.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32603 } });
    expect(third.body.error.message).toMatch(
      /^rate limit: retry after 1 s \(this node takes 1 requests per second from one peer, 2 at once\)$/,
    );
    expect(third.body.error.data).toContainEqual(
      expect.objectContaining({
        reason: "RESOURCE_EXHAUSTED",
        metadata: { retry: "later", retryAfterSeconds: "1", limit: "rate" },
      }),
    );
    // Refused before it is read or parsed: a body that is not even JSON gets the same answer.
    const garbage = await post(limited.url, alpha, "{ not json");
    expect(garbage.status).toBe(429);
    expect(garbage.body.error.code).toBe(-32603);
    // The HTTP+JSON binding shares the bucket, and answers in its own error shape.
    const rest = await fetch(`${limited.url}/tasks/nothing`, {
      headers: { "a2a-version": "1.0" },
      tls: alpha,
    } as RequestInit);
    expect(rest.status).toBe(429);
    expect(rest.headers.get("retry-after")).toBe("1");
    const status = (await rest.json()) as {
      error: { code: number; status: string; message: string; details: { reason: string }[] };
    };
    expect(status.error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED" });
    expect(status.error.message).toMatch(/^rate limit: retry after 1 s/);
    expect(status.error.details).toContainEqual(expect.objectContaining({ reason: "RESOURCE_EXHAUSTED" }));
    // Another peer has its own bucket.
    expect((await call(gamma)).status).toBe(200);
    const m = await scrape(limitedAdmin);
    expect(m.value('a2a_node_rate_limited_total{peer="alpha"}')).toBe(3);
    expect(m.value('a2a_node_rate_limited_total{peer="gamma"}')).toBeUndefined();
    // Refused before any work: the refused request is not a JSON-RPC request the node handled.
    expect(m.value('a2a_node_rpc_request_duration_seconds_count{method="GetTask"}')).toBe(3);
    expect(await limited.waitForLine({ msg: /^rate limit/, level: "warn", peer: "alpha" })).toMatchObject({
      retry_after_s: 1,
    });
    // Health and metrics are not A2A requests: never limited.
    for (let i = 0; i < 5; i++) expect((await get(`${limited.url}/health/live`, alpha)).status).toBe(200);
  });
});

describe("GET /openapi, offline", () => {
  it("serves the reference page and its viewer from the node itself, and the OpenAPI description", async () => {
    const page = await get(`${node.url}/openapi`, alpha);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.text).not.toMatch(/https?:\/\//);
    // The title names the node, as its agent card does (it once read the card function's own name: empty).
    const card = await get(`${node.url}/.well-known/agent-card.json`, alpha);
    expect(card.body.name).toMatch(/\S/);
    expect(page.text).toContain(`<title>${card.body.name}: a2a-node 0.1.0 API reference</title>`);
    const src = /<script src="([^"]+)"><\/script>/.exec(page.text)?.[1];
    expect(src).toBe(SCALAR_PATH);
    const viewer = await fetch(`${node.url}${src}`, { tls: alpha } as RequestInit);
    expect(viewer.status).toBe(200);
    expect(viewer.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const bytes = new Uint8Array(await viewer.arrayBuffer());
    expect(new Bun.CryptoHasher("sha256").update(bytes).digest("hex")).toBe(SCALAR_SHA256);
    expect((await get(`${node.url}/openapi/scalar-0.0.1.js`, alpha)).status).toBe(404);

    const spec = await get(`${node.url}/openapi/json`, alpha);
    expect(spec.status).toBe(200);
    expect(spec.body.info).toMatchObject({ title: "a2a-node", version: "0.1.0" });
    for (const path of ["/", "/health", "/health/live", "/health/ready", "/metrics", "/.well-known/agent-card.json"])
      expect(spec.body.paths, path).toHaveProperty([path]);
    expect(spec.body.paths["/"].post.responses).toHaveProperty("429");
  });
});

describe("queue depth and open streams follow the work (--max-concurrent 1, a model that holds)", () => {
  it("a running streamed task and a queued one show, then go when they end", async () => {
    const model = startGatedModel();
    models.push(model);
    const { node: busy, admin: busyAdmin } = await serve(fleet.homes.busy, [
      "--executor",
      "openai",
      "--model-url",
      model.url,
      "--model",
      "fake",
      "--max-concurrent",
      "1",
      "--caller-share",
      "1",
    ]);
    const stream = await openSse(busy.url, alpha, "SendStreamingMessage", { message: userMessage("[hold] first") });
    await model.arrival("first");
    const queued = await rpc(busy.url, alpha, "SendMessage", {
      message: userMessage("[hold] second"),
      configuration: { returnImmediately: true },
    });
    expect(queued.body.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    const during = await scrape(busyAdmin);
    expect(during.value("a2a_node_sse_streams")).toBe(1);
    expect(during.value("a2a_node_tasks_running")).toBe(1);
    expect(during.value("a2a_node_tasks_queued")).toBe(1);
    expect(during.value('a2a_node_connections_open{listener="mtls"}')).toBeGreaterThanOrEqual(1);
    model.release();
    await stream.rest();
    await busy.waitForLine({ msg: "task finished", task_id: queued.body.result.task.id, state: "completed" });
    const after = await scrape(busyAdmin);
    expect(after.value("a2a_node_sse_streams")).toBe(0);
    expect(after.value("a2a_node_tasks_running")).toBe(0);
    expect(after.value("a2a_node_tasks_queued")).toBe(0);
    expect(after.value('a2a_node_task_duration_seconds_count{state="TASK_STATE_COMPLETED"}')).toBe(2);
    expect(after.value('a2a_node_rpc_request_duration_seconds_count{method="SendStreamingMessage"}')).toBe(1);
  });
});
