import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { StreamResponse as SdkStreamResponse } from "@a2a-js/sdk";
import { DefaultPushNotificationSender } from "@a2a-js/sdk/server";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteDeliveryQueue } from "../../src/store/sqlite-delivery-queue";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { backoffDelay, PushDispatcher, type PushDispatcherOptions } from "../../src/push/push-dispatcher";
import { WebhookGuard } from "../../src/push/ssrf-guard";
import { verifySignature } from "../../src/push/signature";
import type { Logger } from "../../src/log";
import type { StreamResponse, TaskPushNotificationConfig } from "../../src/protocol/types";
import { Receiver, type ReceivedRequest } from "../fakes/webhook-receiver";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let path: string;
let database: OpenDatabase;
let store: SqlitePushConfigStore;
let receivers: Receiver[];
let dispatchers: PushDispatcher[];
let logLines: { level: string; message: string; fields: Record<string, unknown> }[];

const log: Logger = {
  info: (message, fields = {}) => void logLines.push({ level: "info", message, fields }),
  warn: (message, fields = {}) => void logLines.push({ level: "warn", message, fields }),
  error: (message, fields = {}) => void logLines.push({ level: "error", message, fields }),
};

beforeEach(() => {
  dir = tempDir("a2a-push-");
  path = join(dir, "a2a-node.db");
  database = openDatabase(path);
  store = new SqlitePushConfigStore(database);
  receivers = [];
  dispatchers = [];
  logLines = [];
});
afterEach(async () => {
  for (const r of receivers) r.stop();
  await Promise.all(dispatchers.map((d) => d.stop()));
  database.close();
});

function receiver(): Receiver {
  const r = new Receiver();
  receivers.push(r);
  return r;
}

/** A started dispatcher on the test database with a 1 ms backoff base (retries come at once, in order). */
function dispatcher(options: PushDispatcherOptions = {}, db = database, configs = store): PushDispatcher {
  const d = new PushDispatcher(new SqliteDeliveryQueue(db), configs, { backoffBaseMs: 1, log, ...options });
  dispatchers.push(d);
  void d.start(); // with nothing queued yet it is running at once
  return d;
}

function config(
  r: Receiver,
  extra: Partial<TaskPushNotificationConfig> = {},
  owner = "alpha",
): Promise<TaskPushNotificationConfig> {
  return store.create(owner, { id: "", taskId: "t1", url: r.url(), ...extra });
}

const event = (n: number, taskId = "t1"): StreamResponse => ({
  statusUpdate: {
    taskId,
    contextId: "ctx-1",
    status: {
      state: "TASK_STATE_WORKING",
      timestamp: "2026-01-02T03:04:05.678Z",
      message: { messageId: `m${n}`, role: "ROLE_AGENT", parts: [{ text: `step ${n}` }], taskId, contextId: "ctx-1" },
    },
    metadata: { n },
  },
});

const seqOf = (r: ReceivedRequest): number =>
  (JSON.parse(r.body) as { statusUpdate: { metadata: { n: number } } }).statusUpdate.metadata.n;
const rows = (): number =>
  (database.sqlite.query("SELECT count(*) AS n FROM push_deliveries").get() as { n: number }).n;

describe("PushDispatcher", () => {
  it("POSTs the event as application/a2a+json with token, a valid signature and the Authorization header", async () => {
    const r = receiver();
    const guard = new WebhookGuard({ allowlist: [`127.0.0.1:${r.port}`] });
    const d = dispatcher({ guard });
    await config(r, { token: "tok-123", authentication: { scheme: "Bearer", credentials: "cred-xyz" } });
    const e = event(1);
    await d.notify("t1", e);
    expect(rows()).toBe(1); // durably queued before anything is sent
    const [got] = await r.delivered(1);
    expect(got!.method).toBe("POST");
    expect(got!.path).toBe("/hook");
    expect(got!.headers["content-type"]).toBe("application/a2a+json");
    expect(JSON.parse(got!.body)).toEqual(e);
    expect(got!.headers["x-a2a-notification-token"]).toBe("tok-123");
    expect(got!.headers.authorization).toBe("Bearer cred-xyz");
    expect(got!.headers["x-a2a-delivery-id"]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(
      verifySignature("tok-123", got!.headers["x-a2a-timestamp"], got!.body, got!.headers["x-a2a-signature"]),
    ).toBe(true);
    await d.idle();
    expect(rows()).toBe(0);
  });

  it("retries a receiver that fails twice and delivers on the third attempt, signed afresh each time", async () => {
    const r = receiver();
    r.failNext(2);
    const d = dispatcher();
    await config(r, { token: "t" });
    await d.notify("t1", event(1));
    await r.delivered(1);
    expect(r.requests.map((q) => q.status)).toEqual([503, 503, 204]);
    expect(new Set(r.requests.map((q) => q.headers["x-a2a-delivery-id"])).size).toBe(1); // one delivery, three attempts
    for (const q of r.requests)
      expect(verifySignature("t", q.headers["x-a2a-timestamp"], q.body, q.headers["x-a2a-signature"])).toBe(true);
    await d.idle();
    expect(rows()).toBe(0);
    expect(logLines.filter((l) => l.level !== "info")).toEqual([]);
  });

  it("keeps order per config: a later event waits until the earlier one is acknowledged", async () => {
    const a = receiver();
    const b = receiver();
    a.failNext(2);
    const d = dispatcher();
    await config(a);
    await config(b);
    for (let n = 1; n <= 5; n++) await d.notify("t1", event(n));
    await Promise.all([a.delivered(5), b.delivered(5)]);
    expect(a.requests.map(seqOf)).toEqual([1, 1, 1, 2, 3, 4, 5]);
    expect(b.requests.map(seqOf)).toEqual([1, 2, 3, 4, 5]); // not held up by a's retries
  });

  it("puts a delivery taken up from a dead process before the queued head it precedes, if that is not in flight", async () => {
    // A shared queue (renewEveryMs): the dead process's deliveries 1 and 2 are taken up one tick apart (their
    // claims ran out a millisecond apart). 2 comes first, with a retry time still ahead; 1, due now, comes on the
    // next tick while 2 only waits for its time: 1 must go out first.
    const r = receiver();
    await config(r);
    const [{ id: configId }] = await store.forTask("t1");
    const base = new SqliteDeliveryQueue(database);
    const ids = ["01AAAAAAAAAAAAAAAAAAAAAAA1", "01AAAAAAAAAAAAAAAAAAAAAAA2"];
    await base.add(
      ids.map((id, i) => ({
        id,
        task_id: "t1",
        config_id: configId!,
        body: JSON.stringify(event(i + 1)),
        next_attempt_at: new Date(Date.now() + (i === 0 ? 0 : 300)).toISOString(),
      })),
    );
    let loads = 0;
    const shared = Object.assign(Object.create(base) as SqliteDeliveryQueue, {
      renewEveryMs: 20,
      renew: async () => {},
      load: async () => {
        const rows = await base.load();
        loads++;
        if (loads === 1) return []; // start(): the dead process's claims are still fresh
        if (loads === 2) return rows.filter((row) => row.id !== ids[0]); // 2's claim ran out first
        return rows;
      },
    });
    const d = new PushDispatcher(shared, store, { backoffBaseMs: 1, log });
    dispatchers.push(d);
    await d.start();
    const ok = await r.delivered(2);
    expect(loads).toBeGreaterThanOrEqual(3);
    expect(ok.map(seqOf)).toEqual([1, 2]);
  });

  it("bounds the requests in flight across webhooks", async () => {
    const r = receiver();
    r.respondAfter(20); // so concurrent sends overlap at the receiver
    const d = dispatcher({ concurrency: 2 });
    for (let t = 1; t <= 6; t++) await store.create("alpha", { id: "c", taskId: `t${t}`, url: r.url() });
    for (let t = 1; t <= 6; t++) await d.notify(`t${t}`, event(1, `t${t}`));
    await r.delivered(6);
    expect(r.maxActive).toBe(2);
  });

  it("delivers, after a restart, what was queued before it (and what was queued while stopped), in order", async () => {
    const r = receiver();
    r.failNext(Infinity);
    const d1 = dispatcher({ backoffBaseMs: 60_000 }); // no retry of its own before the "crash"
    await config(r);
    await d1.notify("t1", event(1));
    await d1.notify("t1", event(2));
    await r.received(1);
    await d1.stop();
    const left = database.sqlite
      .query("SELECT attempts, last_error, next_attempt_at FROM push_deliveries ORDER BY id")
      .all() as {
      attempts: number;
      last_error: string | null;
      next_attempt_at: string;
    }[];
    expect(left.map((x) => [x.attempts, x.last_error])).toEqual([
      [1, "HTTP 503"],
      [0, null],
    ]);
    expect(Date.parse(left[0]!.next_attempt_at)).toBeGreaterThan(Date.now() + 30_000);
    database.close();

    r.succeed();
    database = openDatabase(path);
    store = new SqlitePushConfigStore(database);
    // The new process's clock is past the stored retry time (as it would be after a restart that took a while).
    const d2 = new PushDispatcher(new SqliteDeliveryQueue(database), store, {
      backoffBaseMs: 1,
      log,
      clock: () => Date.now() + 120_000,
    });
    dispatchers.push(d2);
    await d2.notify("t1", event(3)); // stopped: queued, not sent
    expect(rows()).toBe(3);
    expect(r.requests).toHaveLength(1);
    await d2.start();
    const ok = await r.delivered(3);
    expect(ok.map(seqOf)).toEqual([1, 2, 3]);
    await d2.idle();
    expect(rows()).toBe(0);
  });

  it("gives up after maxAttempts with one log line and no row left, then goes on with the next event", async () => {
    const r = receiver();
    r.failNext(3, 500);
    const d = dispatcher({ maxAttempts: 3 });
    const c = await config(r, { token: "never-logged" });
    await d.notify("t1", event(1));
    await d.notify("t1", event(2));
    await r.delivered(1);
    await d.idle();
    expect(r.requests.map((q) => [seqOf(q), q.status])).toEqual([
      [1, 500],
      [1, 500],
      [1, 500],
      [2, 204],
    ]);
    expect(rows()).toBe(0);
    const warnings = logLines.filter((l) => l.level === "warn");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      message: "push delivery abandoned",
      fields: { task: "t1", config: c.id, attempts: 3, error: "HTTP 500", host: `127.0.0.1:${r.port}` },
    });
    expect(JSON.stringify(logLines)).not.toContain("never-logged");
  });

  it("drops pending deliveries when their config is deleted", async () => {
    const r = receiver();
    r.failNext(Infinity);
    const d = dispatcher();
    const c = await config(r);
    await d.notify("t1", event(1));
    await d.notify("t1", event(2));
    await r.received(1);
    expect(await store.delete("alpha", "t1", c.id)).toBe(true);
    r.succeed();
    await d.idle();
    expect(r.requests.map(seqOf)).toEqual([1]); // nothing more after the delete
    expect(rows()).toBe(0);
  });

  it("drops queued deliveries whose config vanished without the store's delete (e.g. removed by hand)", async () => {
    const r = receiver();
    const c = await config(r);
    const d = new PushDispatcher(new SqliteDeliveryQueue(database), store, { backoffBaseMs: 1, log });
    dispatchers.push(d);
    await d.notify("t1", event(1));
    await d.notify("t1", event(2));
    database.sqlite.query("DELETE FROM push_configs WHERE id = ?1").run(c.id);
    await d.start();
    await d.idle();
    expect(r.requests).toHaveLength(0);
    expect(rows()).toBe(0);
    expect(logLines).toContainEqual(
      expect.objectContaining({
        message: "push config gone; dropped its queued deliveries",
        fields: expect.objectContaining({ dropped: 2 }),
      }),
    );
  });

  it("re-checks the URL at delivery time and never sends to a refused address", async () => {
    const r = receiver();
    const d = dispatcher({ guard: new WebhookGuard(), maxAttempts: 2 });
    await config(r); // stored without a check, as if its name had resolved to a public address at creation
    await d.notify("t1", event(1));
    await d.idle();
    expect(r.requests).toHaveLength(0);
    expect(logLines.find((l) => l.message === "push delivery abandoned")?.fields.error).toMatch(
      /127\.0\.0\.1' is a loopback address/,
    );
  });

  it("does not follow redirects (they would bypass the URL check)", async () => {
    const target = receiver();
    const r = receiver();
    r.failNext(1, 307, { Location: target.url("/elsewhere") });
    const d = dispatcher({ maxAttempts: 1 });
    await config(r);
    await d.notify("t1", event(1));
    await d.idle();
    expect(r.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(logLines.find((l) => l.message === "push delivery abandoned")?.fields.error).toBe(
      "HTTP 307 (redirects are not followed)",
    );
  });

  it("times out a receiver that never answers and retries", async () => {
    const r = receiver();
    r.hangNext();
    const d = dispatcher({ timeoutMs: 100 });
    await config(r);
    await d.notify("t1", event(1));
    const ok = await r.delivered(1);
    expect(r.requests).toHaveLength(2);
    expect(seqOf(ok[0]!)).toBe(1);
  });

  it("writes nothing for a task without webhooks, and only the given owner's configs when an owner is passed", async () => {
    const r = receiver();
    const d = dispatcher();
    await d.notify("no-such-task", event(1, "no-such-task"));
    expect(rows()).toBe(0);
    await config(r, { id: "mine" }, "alpha");
    await config(r, { id: "foreign" }, "mallory");
    await d.notify("t1", event(1), "alpha");
    await r.delivered(1);
    await d.idle();
    expect(r.requests).toHaveLength(1);
  });

  it("sends what @a2a-js/sdk's DefaultPushNotificationSender sends (same body, same headers with the same values)", async () => {
    for (const authentication of [undefined, { scheme: "Bearer", credentials: "cred" }]) {
      const sdkSide = receiver();
      const ours = receiver();
      const e = event(7);
      const sdkConfig = { id: "c", taskId: "t1", url: sdkSide.url(), token: "tok", authentication };
      const sdkStore = {
        loadWithMetadata: async () => [{ config: sdkConfig, wireVersion: "1.0" }],
        load: async () => [sdkConfig],
        save: async () => {},
        delete: async () => {},
      };
      const sender = new DefaultPushNotificationSender(sdkStore as never);
      await sender.send(SdkStreamResponse.fromJSON(e), {} as never, undefined as never);
      const [fromSdk] = await sdkSide.received(1);

      const d = dispatcher();
      await store.create("alpha", { id: "c", taskId: "t1", url: ours.url(), token: "tok", authentication });
      await d.notify("t1", e);
      const [fromUs] = await ours.delivered(1);
      await d.stop();
      store.delete("alpha", "t1", "c");

      expect(JSON.parse(fromUs!.body)).toEqual(JSON.parse(fromSdk!.body));
      const transport = new Set(["host", "content-length", "user-agent", "accept", "accept-encoding", "connection"]);
      const sdkHeaders = Object.entries(fromSdk!.headers).filter(([k]) => !transport.has(k));
      expect(sdkHeaders.length).toBeGreaterThanOrEqual(2); // content type + token or Authorization
      for (const [k, v] of sdkHeaders) expect([k, fromUs!.headers[k]]).toEqual([k, v]);
    }
  });
});

describe("backoffDelay", () => {
  it("doubles from the base with ±20 % jitter and stops at the cap", () => {
    const mid = () => 0.5; // jitter factor 1.0
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, 1000, 300_000, mid))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffDelay(1, 1000, 300_000, () => 0)).toBe(800);
    expect(backoffDelay(1, 1000, 300_000, () => 0.999999)).toBe(1200);
    expect(backoffDelay(10, 1000, 300_000, mid)).toBe(300_000);
    expect(backoffDelay(1000, 1000, 300_000, mid)).toBe(300_000);
  });
});
