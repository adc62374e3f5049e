import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteDeliveryQueue } from "../../src/store/sqlite-delivery-queue";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { PushDispatcher, type PushDispatcherOptions } from "../../src/push/push-dispatcher";
import { WebhookGuard, type LookupAll } from "../../src/push/ssrf-guard";
import type { Logger } from "../../src/log";
import type { StreamResponse } from "../../src/protocol/types";
import { Receiver, type ReceiverOptions } from "../fakes/webhook-receiver";
import { tempDir } from "../helpers/temp-dir";

/**
 * Fairness and pinned delivery through the whole dispatcher: real SQLite, real receivers on loopback. Webhook
 * hosts are names under .test that the guard's resolver maps to 127.0.0.1 (the names are allow-listed, as a
 * LAN receiver would be), so each has its own host name, and a delivery that reaches a receiver at all went to
 * the address the guard resolved: nothing else can resolve these names.
 */
let dir: string;
let database: OpenDatabase;
let store: SqlitePushConfigStore;
let receivers: Receiver[];
let dispatchers: PushDispatcher[];
let logLines: { level: string; message: string; fields: Record<string, unknown> }[];
let lookups: string[];

const log: Logger = {
  info: (message, fields = {}) => void logLines.push({ level: "info", message, fields }),
  warn: (message, fields = {}) => void logLines.push({ level: "warn", message, fields }),
  error: (message, fields = {}) => void logLines.push({ level: "error", message, fields }),
};

beforeEach(() => {
  dir = tempDir("a2a-push-fair-");
  database = openDatabase(join(dir, "a2a-node.db"));
  store = new SqlitePushConfigStore(database);
  receivers = [];
  dispatchers = [];
  logLines = [];
  lookups = [];
});
afterEach(async () => {
  // Receivers first: closing a black hole ends the requests hanging on it, so the dispatchers can stop.
  for (const r of receivers) r.stop();
  await Promise.all(dispatchers.map((d) => d.stop()));
  database.close();
});

function receiver(options: ReceiverOptions = {}): Receiver {
  const r = new Receiver(options);
  receivers.push(r);
  return r;
}

/** Every *.test name is 127.0.0.1 (and allow-listed); each lookup is recorded. */
const loopbackDns: LookupAll = async (host) => {
  lookups.push(host);
  return [{ address: "127.0.0.1", family: 4 }];
};

function dispatcher(options: PushDispatcherOptions, start = true): PushDispatcher {
  const guard = new WebhookGuard({
    lookup: loopbackDns,
    allowlist: ["hole.test", "hole1.test", "hole2.test", "hole3.test", "alpha.test", "bravo.test"],
  });
  const d = new PushDispatcher(new SqliteDeliveryQueue(database), store, { backoffBaseMs: 1, log, guard, ...options });
  dispatchers.push(d);
  if (start) void d.start();
  return d;
}

const event = (taskId: string, n = 1): StreamResponse => ({
  statusUpdate: {
    taskId,
    contextId: "ctx-1",
    status: { state: "TASK_STATE_WORKING", timestamp: "2026-01-02T03:04:05.678Z" },
    metadata: { n },
  },
});

/** `owner` registers a webhook at `url` for a task of its own and an event of that task is queued. */
async function hook(d: PushDispatcher, owner: string, taskId: string, url: string): Promise<void> {
  await store.create(owner, { id: "hook", taskId, url });
  await d.notify(taskId, event(taskId));
}

// Long enough that no request to a black hole ends during a test: anything that waited for one would hang
// the test instead of passing.
const NEVER = 120_000;

describe("PushDispatcher fairness", () => {
  it("a black-holing webhook host holds only its host's share: another caller's delivery goes out meanwhile", async () => {
    const hole = receiver();
    hole.hangAll();
    const bravo = receiver();
    const d = dispatcher({ concurrency: 4, hostConcurrency: 2, callerConcurrency: 4, timeoutMs: NEVER });
    for (let t = 1; t <= 6; t++) await hook(d, "alpha", `a${t}`, hole.url("/hook", "hole.test"));
    await hook(d, "bravo", "b1", bravo.url("/hook", "bravo.test"));

    // Decided at once, before any answer: alpha's host got its two slots and bravo's delivery one of the others.
    expect(d.inFlight({ host: "hole.test" })).toBe(2);
    expect(d.inFlight({ owner: "alpha" })).toBe(2);
    expect(d.inFlight({ owner: "bravo" })).toBe(1);

    const [got] = await bravo.delivered(1);
    expect(got!.headers.host).toBe(`bravo.test:${bravo.port}`);
    await hole.received(2);
    // Bravo was answered while alpha's requests were all still hanging, and no further one was started.
    expect(hole.requests.map((r) => r.status)).toEqual([0, 0]);
    expect(d.inFlight({ host: "hole.test" })).toBe(2);
    expect(hole.requests).toHaveLength(2);
  });

  it("a caller with black holes on many hosts holds only its caller share", async () => {
    const hole = receiver();
    hole.hangAll();
    const bravo = receiver();
    const d = dispatcher({ concurrency: 4, hostConcurrency: 4, callerConcurrency: 2, timeoutMs: NEVER });
    // Three host names (one machine): per-host caps alone would let alpha fill all four slots.
    for (let t = 1; t <= 6; t++) await hook(d, "alpha", `a${t}`, hole.url("/hook", `hole${1 + (t % 3)}.test`));
    await hook(d, "bravo", "b1", bravo.url("/hook", "bravo.test"));

    expect(d.inFlight({ owner: "alpha" })).toBe(2);
    expect(d.inFlight({ owner: "bravo" })).toBe(1);
    await bravo.delivered(1);
    await hole.received(2);
    expect(hole.requests.map((r) => r.status)).toEqual([0, 0]);
    expect(d.inFlight({ owner: "alpha" })).toBe(2); // alpha still holds exactly its share, no more
    expect(new Set(hole.requests.map((r) => r.headers.host.split(":")[0])).size).toBe(2); // two different hosts
  });

  it("serves callers in turn: with one slot, deliveries alternate between the callers", async () => {
    const journal: string[] = [];
    const alpha = receiver({ journal: { name: "alpha", events: journal } });
    const bravo = receiver({ journal: { name: "bravo", events: journal } });
    const d = dispatcher({ concurrency: 1 }, false);
    // Queued while stopped, alpha's four first: a FIFO would send them all before bravo's.
    for (let t = 1; t <= 4; t++) await hook(d, "alpha", `a${t}`, alpha.url("/hook", "alpha.test"));
    for (let t = 1; t <= 4; t++) await hook(d, "bravo", `b${t}`, bravo.url("/hook", "bravo.test"));
    await d.start();
    await Promise.all([alpha.delivered(4), bravo.delivered(4)]);
    expect(journal).toEqual(["alpha", "bravo", "alpha", "bravo", "alpha", "bravo", "alpha", "bravo"]);
    expect(alpha.maxActive).toBe(1);
    expect(bravo.maxActive).toBe(1);
  });

  it("keeps order per (task, webhook) under the fair share, through retries", async () => {
    const r = receiver();
    r.failNext(3);
    const d = dispatcher({ concurrency: 8, hostConcurrency: 1, callerConcurrency: 1 });
    await store.create("alpha", { id: "hook", taskId: "t1", url: r.url("/hook", "alpha.test") });
    for (let n = 1; n <= 4; n++) await d.notify("t1", event("t1", n));
    const ok = await r.delivered(4);
    expect(
      ok.map((q) => (JSON.parse(q.body) as { statusUpdate: { metadata: { n: number } } }).statusUpdate.metadata.n),
    ).toEqual([1, 2, 3, 4]);
    expect(r.requests).toHaveLength(7);
    await d.idle();
    expect((database.sqlite.query("SELECT count(*) AS n FROM push_deliveries").get() as { n: number }).n).toBe(0);
  });
});

describe("PushDispatcher: the address checked is the address connected to", () => {
  it("resolves the name once per attempt and connects to that address (the name itself resolves nowhere)", async () => {
    const r = receiver();
    const d = dispatcher({});
    await hook(d, "alpha", "t1", r.url("/hook", "alpha.test"));
    const [got] = await r.delivered(1);
    expect(got!.headers.host).toBe(`alpha.test:${r.port}`);
    await d.idle();
    expect(lookups).toEqual(["alpha.test"]);
  });

  it("a name that answers a public address to the check and 127.0.0.1 afterwards never reaches 127.0.0.1", async () => {
    const local = receiver(); // what a rebinding attacker wants to reach
    const answers = ["93.184.216.34", "127.0.0.1", "127.0.0.1"];
    const asked: string[] = [];
    const guard = new WebhookGuard({
      lookup: async (host) => {
        asked.push(host);
        return [{ address: answers.shift()!, family: 4 }];
      },
    });
    // The public address is the internet, which a test cannot reach: this fetch stands in for it, recording
    // where it was asked to connect. Anything else goes to the real fetch (and so would reach `local`).
    const connects: { url: string; host: string | null }[] = [];
    const internet = async (url: string, init: RequestInit): Promise<Response> => {
      connects.push({ url, host: new Headers(init.headers).get("host") });
      if (new URL(url).hostname === "93.184.216.34")
        throw Object.assign(new TypeError("ECONNREFUSED: Unable to connect"), { code: "ECONNREFUSED" });
      return fetch(url, init);
    };
    const d = new PushDispatcher(new SqliteDeliveryQueue(database), store, {
      backoffBaseMs: 1,
      log,
      guard,
      fetch: internet,
      maxAttempts: 2,
    });
    dispatchers.push(d);
    await d.start();
    await hook(d, "alpha", "t1", local.url("/hook", "rebind.test"));
    await d.idle();

    // Attempt 1: one lookup (public), the connection went to exactly that address, naming the host.
    // Attempt 2: one lookup (now loopback), refused before any connection.
    expect(asked).toEqual(["rebind.test", "rebind.test"]);
    expect(connects).toEqual([{ url: `http://93.184.216.34:${local.port}/hook`, host: `rebind.test:${local.port}` }]);
    expect(local.requests).toHaveLength(0);
    const abandoned = logLines.find((l) => l.message === "push delivery abandoned");
    expect(abandoned?.fields.error).toMatch(/'rebind.test' resolves to 127\.0\.0\.1, which is a loopback address/);
  });

  it("an unresolvable webhook host fails the attempt at the DNS timeout, not the system resolver's", async () => {
    const guard = new WebhookGuard({ lookup: () => new Promise(() => {}), lookupTimeoutMs: 20 });
    const d = new PushDispatcher(new SqliteDeliveryQueue(database), store, {
      backoffBaseMs: 1,
      log,
      guard,
      maxAttempts: 1,
      timeoutMs: NEVER,
    });
    dispatchers.push(d);
    await d.start();
    await hook(d, "alpha", "t1", "https://black-hole-dns.test/hook");
    await d.idle();
    expect(logLines.find((l) => l.message === "push delivery abandoned")?.fields.error).toMatch(
      /'black-hole-dns.test' did not resolve within 20 ms \(DNS timeout\)/,
    );
  });
});
