/**
 * The authorization policy and the audit log on a real node (in-process: real mTLS on loopback, certificates
 * from our PKI, real SQLite): per peer, method and skill over both bindings and v0.3, the plain loopback
 * listener, a reload, and every kind of refused connection in the audit log. The compiled binary's side (the
 * config file, SIGHUP, rotation, --check) is in test/e2e/authorization-audit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, statSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import { DEFAULTS, type ServeConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { httpJsonDriver, jsonRpcDriver, type BindingDriver } from "../helpers/bindings";
import { craftCert } from "../helpers/crafted-certs";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { post, rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let node: RunningNode;
let config: ServeConfig;
let auditPath: string;
const who: Record<string, TlsIdentity> = {};
/** Text no audit line may hold: every message sent here carries it. */
const SECRET = `the-launch-code-${crypto.randomUUID()}`;
const quiet = createLogger(() => {}, "error");

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]);
  for (const n of ["beta", "gamma", "delta", "epsilon", "zeta", "eta"]) who[n] = fleet.identity(n);
  auditPath = join(fleet.root, "audit", "calls.jsonl");
  config = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    plainHttpPort: 0,
    executor: "echo",
    auditLog: auditPath,
    // A webhook on this machine passes the SSRF guard: only the policy can refuse it.
    pushAllow: ["127.0.0.1"],
    authorize: [
      { peers: ["beta", "epsilon", "zeta"], methods: ["*"] },
      { peers: ["gamma"], methods: ["GetTask", "ListTasks"] },
      { peers: ["delta"], methods: ["SendMessage", "ListTasks"], skills: ["summarise"] },
      { peers: ["eta"], methods: ["SendMessage", "SendStreamingMessage", "ListTasks"] },
    ],
  };
  // A copy: a reload changes the running configuration in place.
  node = await startNode(fleet.homes.alpha, { ...config }, quiet);
});

afterAll(async () => {
  await node?.stop().catch(() => {});
  fleet?.cleanup();
});

const say = (extra: Record<string, unknown> = {}) => ({ message: userMessage(`${SECRET} please`, extra) });
const drivers = (): BindingDriver[] => [jsonRpcDriver(node.url), httpJsonDriver(node.url)];

describe.each(["JSONRPC", "HTTP+JSON"])("the policy over %s", (binding) => {
  const driver = () => drivers().find((d) => d.name === binding) as BindingDriver;
  const denied = binding === "JSONRPC" ? { code: -32000, status: 200 } : { code: 403, status: 403 };

  it("lets a peer a rule names make every call it lists", async () => {
    const sent = await driver().call(who.beta, "SendMessage", say());
    expect(sent.ok, sent.message).toBe(true);
    const id = sent.result.task.id;
    expect((await driver().call(who.beta, "GetTask", { id })).result.id).toBe(id);
    expect((await driver().call(who.beta, "ListTasks", {})).ok).toBe(true);
  });

  it("refuses a method its rules do not list: PERMISSION_DENIED naming the peer, the method and the key to change; no task is made", async () => {
    const r = await driver().call(who.gamma, "SendMessage", say());
    expect(r).toMatchObject({ ok: false, reason: "PERMISSION_DENIED", ...denied });
    expect(r.message).toBe(
      "permission denied: peer 'gamma' may not call SendMessage on this node (no [[authorize]] rule in its config.toml allows it); this node's operator can add 'gamma' to the peers of a rule whose methods include SendMessage, then reload it with SIGHUP",
    );
    if (binding === "HTTP+JSON") expect(r.reply.body.error.status).toBe("PERMISSION_DENIED");
    else
      expect(r.reply.body.error.data[0]).toMatchObject({
        reason: "PERMISSION_DENIED",
        domain: "a2a-protocol.org",
        metadata: { peer: "gamma", method: "SendMessage" },
      });
    const listed = await driver().call(who.gamma, "ListTasks", {});
    expect(listed.ok).toBe(true);
    expect(listed.result.tasks).toEqual([]);
    const stream = await driver().stream(who.gamma, "SendStreamingMessage", say());
    expect(stream.ok).toBe(false);
    expect(stream.refused).toMatchObject({ reason: "PERMISSION_DENIED", ...denied });
    expect((await driver().call(who.gamma, "ListTasks", {})).result.tasks).toEqual([]);
    expect((await driver().call(who.gamma, "CancelTask", { id: "x" })).reason).toBe("PERMISSION_DENIED");
  });

  it("refuses a peer no rule names, whatever it calls, before looking anything up", async () => {
    const own = await driver().call(who.beta, "SendMessage", say());
    for (const [op, params] of [
      ["SendMessage", say()],
      ["GetTask", { id: own.result.task.id }],
      ["GetTask", { id: "no-such-task" }],
      ["ListTasks", {}],
      ["CancelTask", { id: own.result.task.id }],
      ["GetExtendedAgentCard", {}],
      ["ListTaskPushNotificationConfigs", { taskId: own.result.task.id }],
    ] as const) {
      const r = await driver().call(fleet.identity("alpha"), op, params);
      expect(r, op).toMatchObject({ ok: false, reason: "PERMISSION_DENIED", ...denied });
      expect(r.message).toContain(`peer 'alpha' may not call ${op} on this node`);
    }
  });

  it("with skills: lets messages through only for a listed skill (message.metadata.skill)", async () => {
    const ok = await driver().call(who.delta, "SendMessage", say({ metadata: { skill: "summarise" } }));
    expect(ok.ok, ok.message).toBe(true);
    const other = await driver().call(who.delta, "SendMessage", say({ metadata: { skill: "analyse-logs" } }));
    expect(other).toMatchObject({ ok: false, reason: "PERMISSION_DENIED" });
    expect(other.message).toContain("peer 'delta' may not call SendMessage with skill 'analyse-logs' on this node");
    expect(other.message).toContain("whose skills include 'analyse-logs'");
    const none = await driver().call(who.delta, "SendMessage", say());
    expect(none).toMatchObject({ ok: false, reason: "PERMISSION_DENIED" });
    expect((await driver().call(who.delta, "ListTasks", {})).result.tasks.map((t: { id: string }) => t.id)).toContain(
      ok.result.task.id,
    );
    expect((await driver().call(who.delta, "GetTask", { id: ok.result.task.id })).reason).toBe("PERMISSION_DENIED");
  });

  it("withholds a webhook sent along with a message from a peer not allowed CreateTaskPushNotificationConfig, streaming or not; nothing is made", async () => {
    const hook = { url: "https://127.0.0.1:9/hook", token: "t" };
    const before = (await driver().call(who.eta, "ListTasks", {})).result.tasks.length;
    for (const op of ["SendMessage", "SendStreamingMessage"]) {
      const params = { ...say(), configuration: { taskPushNotificationConfig: hook } };
      const r =
        op === "SendMessage"
          ? await driver().call(who.eta, op, params)
          : (await driver().stream(who.eta, op, params)).refused;
      expect(r, op).toMatchObject({ ok: false, reason: "PERMISSION_DENIED", ...denied });
      expect(r?.message, op).toContain("peer 'eta' may not call CreateTaskPushNotificationConfig on this node");
      // Proto field names are read too, and judged the same.
      const proto = { ...say(), configuration: { task_push_notification_config: hook } };
      expect((await driver().call(who.eta, "SendMessage", proto)).reason).toBe("PERMISSION_DENIED");
    }
    expect((await driver().call(who.eta, "ListTasks", {})).result.tasks.length).toBe(before);
    // The same message without a webhook is what eta may send.
    expect((await driver().call(who.eta, "SendMessage", say())).ok).toBe(true);
  });

  it("keeps tasks scoped to their creator, for peers the policy lets read", async () => {
    const betas = await driver().call(who.beta, "SendMessage", say());
    const r = await driver().call(who.gamma, "GetTask", { id: betas.result.task.id });
    expect(r.reason).toBe("TASK_NOT_FOUND");
  });
});

describe("the policy elsewhere", () => {
  it("judges a v0.3 call (no A2A-Version) as the v1.0 operation it runs", async () => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: crypto.randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: SECRET }],
        },
      },
    });
    const r = await post(`${node.url}/`, who.gamma, body, {});
    expect(r.body.error).toMatchObject({ code: -32000 });
    expect(r.body.error.message).toContain("peer 'gamma' may not call SendMessage");
    expect((await post(`${node.url}/`, who.beta, body, {})).body.result.kind).toBe("task");
  });

  it("withholds a v0.3 message/send's pushNotificationConfig as it does v1.0's", async () => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: crypto.randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: SECRET }],
        },
        configuration: { pushNotificationConfig: { url: "https://127.0.0.1:9/hook" } },
      },
    });
    const r = await post(`${node.url}/`, who.eta, body, {});
    expect(r.body.error).toMatchObject({ code: -32000 });
    expect(r.body.error.message).toContain("peer 'eta' may not call CreateTaskPushNotificationConfig");
  });

  it("does not apply to the plain loopback listener's caller (the machine's own operator)", async () => {
    const res = await fetch(node.plainUrl as string, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: say() }),
    });
    const body = (await res.json()) as { result: { task: { status: { state: string } } } };
    expect(body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("takes a changed policy on reload, for the next call", async () => {
    expect((await rpc(node.url, who.gamma, "SendMessage", say())).body.error.code).toBe(-32000);
    const next = { ...config, authorize: [...config.authorize, { peers: ["gamma"], methods: ["SendMessage"] }] };
    const { applied, needsRestart } = await node.reload(next);
    expect(applied).toContain("authorize");
    expect(needsRestart).toEqual([]);
    const r = await rpc(node.url, who.gamma, "SendMessage", say());
    expect(r.body.error).toBeUndefined();
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    await node.reload(config);
    expect((await rpc(node.url, who.gamma, "SendMessage", say())).body.error.code).toBe(-32000);
  });
});

/** Resolves with the Response, or with the error fetch rejected with. */
async function attempt(tls: Partial<TlsIdentity>): Promise<{ res?: Response; err?: unknown }> {
  try {
    const res = await fetch(`${node.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
      // A connection of its own each time: each attempt is judged at its handshake.
      keepalive: false,
      tls,
    } as RequestInit);
    await res.arrayBuffer();
    return { res };
  } catch (err) {
    return { err };
  }
}

describe("the audit log", () => {
  const DAY = 86_400_000;
  let lines: Record<string, any>[];
  let text: string;
  let fingerprints: Record<string, string>;

  beforeAll(async () => {
    const ca = fleet.ca();
    const crafted = async (
      cn: string,
      opts: Parameters<typeof craftCert>[1] extends infer O ? Omit<O & object, "subject"> : never,
    ) => {
      const c = await craftCert(ca, { subject: [{ CN: [cn] }], ...opts });
      return { cert: c.certPem, key: c.keyPem, ca: who.beta.ca };
    };
    const refusals: [string, Partial<TlsIdentity>][] = [
      ["no certificate", { ca: who.beta.ca }],
      ["foreign CA", await fleet.foreign("mallory")],
      [
        "expired",
        await crafted("old-one", { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) }),
      ],
      [
        "not yet valid",
        await crafted("early-one", {
          notBefore: new Date(Date.now() + DAY),
          notAfter: new Date(Date.now() + 10 * DAY),
        }),
      ],
      ["code signing", await crafted("signer", { eku: ["1.3.6.1.5.5.7.3.3"] })],
      ["no EKU", await crafted("no-eku", { eku: [] })],
    ];
    for (const [what, tls] of refusals) {
      const { res } = await attempt(tls);
      expect(res, what).toBeUndefined();
    }
    // zeta is revoked on the CA: the next connection is judged against the list on disk, no reload needed, and
    // gets one answer saying so (403) before it is closed.
    expect((await attempt(who.zeta)).res?.status).toBe(200);
    const io = bufferIo({});
    expect(await runCli(["--home", fleet.homes.alpha, "pki", "revoke", "zeta"], io), io.err()).toBe(0);
    expect((await attempt(who.zeta)).res?.status).toBe(403);

    // A peer over its rate limit.
    await node.reload({ ...config, rateLimitPerSecond: 0.001, rateLimitBurst: 1 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await rpc(node.url, who.epsilon, "ListTasks", {})).status);
    expect(statuses).toContain(429);
    await node.reload(config);
    // A fleet PKI route, and calls the binding refuses itself.
    expect((await fetch(`${node.url}/pki/crl`, { tls: who.beta } as RequestInit)).status).toBe(200);
    expect((await fetch(`${node.url}/pki/nothing`, { tls: who.beta } as RequestInit)).status).toBe(404);
    expect((await post(`${node.url}/`, who.beta, "{not json")).body.error.code).toBe(-32700);
    expect((await rpc(node.url, who.beta, "NoSuchMethod", {})).body.error.code).toBe(-32601);
    await node.stop(); // flushes the log
    text = readFileSync(auditPath, "utf8");
    lines = text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    fingerprints = Object.fromEntries(
      Object.entries(who).map(([n, id]) => [n, new X509Certificate(id.cert).fingerprint256]),
    );
  });

  it("is a 0600 file of JSON lines, with no message text in it", () => {
    expect(statSync(auditPath).mode & 0o777).toBe(0o600);
    expect(lines.length).toBeGreaterThan(40);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("please");
    expect(text).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);
  });

  it("records each call answered: peer, fingerprint, binding, method, task id, outcome, duration", () => {
    const calls = lines.filter((l) => l.event === "call");
    const ok = calls.find(
      (l) => l.peer === "beta" && l.method === "SendMessage" && l.binding === "jsonrpc" && l.outcome === "ok",
    );
    expect(ok).toMatchObject({
      fingerprint: fingerprints.beta,
      taskId: expect.stringMatching(/^[0-9A-Z]{26}$/),
      ms: expect.any(Number),
    });
    expect(Object.keys(ok as object).sort()).toEqual([
      "binding",
      "event",
      "fingerprint",
      "method",
      "ms",
      "outcome",
      "peer",
      "taskId",
      "time",
    ]);
    const got = calls.find((l) => l.peer === "beta" && l.method === "GetTask" && l.binding === "http-json");
    expect(got).toMatchObject({ outcome: "ok", taskId: expect.any(String) });
    const streamed = calls.filter((l) => l.method === "SendStreamingMessage" && l.peer === "gamma");
    expect(streamed.map((l) => l.outcome)).toEqual(["denied", "denied"]);
    const v03 = calls.find((l) => l.method === "message/send" && l.peer === "beta");
    expect(v03).toMatchObject({ outcome: "ok", taskId: expect.any(String) });
    expect(calls.find((l) => l.peer === "@local")).toMatchObject({
      fingerprint: "plain-http-loopback",
      method: "SendMessage",
      outcome: "ok",
    });
    expect(calls.find((l) => l.peer === "gamma" && l.method === "GetTask" && l.outcome === "error")).toMatchObject({
      code: -32001,
      taskId: expect.any(String),
    });
    expect(calls.find((l) => l.code === -32700)).toMatchObject({ peer: "beta", outcome: "error" });
    expect(calls.find((l) => l.code === -32601)).toMatchObject({ peer: "beta", outcome: "error" });
    expect(calls.find((l) => l.outcome === "rate_limited")).toMatchObject({
      peer: "epsilon",
      fingerprint: fingerprints.epsilon,
      code: 429,
      binding: "jsonrpc",
    });
    expect(calls.filter((l) => l.binding === "pki").map((l) => [l.method, l.outcome, l.code])).toEqual([
      ["GET /pki/crl", "ok", undefined],
      [undefined, "error", 404],
    ]);
  });

  it("records each call the policy refused as denied, with the method and the task it named", () => {
    const denied = lines.filter((l) => l.outcome === "denied");
    expect(denied.length).toBeGreaterThanOrEqual(20);
    for (const l of denied) expect(l.code).toBe(-32000);
    expect(
      denied.find((l) => l.peer === "gamma" && l.method === "SendMessage" && l.binding === "http-json"),
    ).toMatchObject({ fingerprint: fingerprints.gamma });
    expect(denied.find((l) => l.peer === "alpha" && l.method === "CancelTask")).toMatchObject({
      taskId: expect.any(String),
    });
    expect(denied.find((l) => l.peer === "gamma" && l.method === "message/send")).toBeTruthy();
    // A refused SendMessage names no task: none was made.
    for (const l of denied.filter((d) => d.method === "SendMessage")) expect(l.taskId).toBeUndefined();
  });

  it("records every refused connection with its reason: no certificate, foreign CA, expired, not yet valid, wrong purpose, revoked", () => {
    const refused = lines.filter((l) => l.event === "refused");
    const kinds = refused.map((l) => l.kind);
    for (const k of ["no_certificate", "foreign_ca", "expired", "not_yet_valid", "wrong_purpose", "revoked"])
      expect(kinds, k).toContain(k);
    for (const l of refused)
      expect(l).toMatchObject({ reason: expect.any(String), remote: expect.stringMatching(/127\.0\.0\.1/) });
    // Refused after the handshake: the certificate's name and fingerprint are known.
    expect(refused.find((l) => l.kind === "revoked")).toMatchObject({
      peer: "zeta",
      fingerprint: fingerprints.zeta,
      reason: expect.stringMatching(/was revoked on /),
    });
    expect(refused.find((l) => l.kind === "wrong_purpose" && l.peer === "no-eku")).toMatchObject({
      fingerprint: expect.stringMatching(/^[0-9A-F:]{95}$/),
    });
  });
});
