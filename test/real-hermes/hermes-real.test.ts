/**
 * Against the REAL Hermes Agent API server (0.18.2, the older generation, with its scripted model:
 * test/helpers/real-hermes.ts), one server for the file:
 * - the wire: the same requests to the real server and to the fake twin (older generation, playing the same
 *   scripted model), and the same answers and events back, field for field (ids and times aside): every way the
 *   twin differed from the real server is pinned here;
 * - the Hermes executor's scenario list (hermes-scenarios.ts), which the twin passes too;
 * - the CLI as a person uses it: an approval asked with `send --wait` and answered with `--task-id ... --wait`.
 * The real server must be there (A2A_REAL_HERMES, default /work/shared/real-hermes): without it this file fails.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/registry";
import { bufferIo, type Io } from "../../src/cli/io";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { hermesScenarios } from "../executors/hermes-scenarios";
import { call, openEvents, type Block } from "../fakes/hermes/client";
import { startFakeHermes, type FakeHermes } from "../fakes/hermes/server";
import { markerScript } from "../fakes/hermes/markers";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { REAL_HERMES_CAPACITY, startRealHermes, type RealHermes } from "../helpers/real-hermes";

// Real runs: the agent, its tools and a model over HTTP, a few seconds each on a busy machine (the first run of
// a fresh server loads its tools: ten seconds or more).
const SLOW = 120_000;
// The first setup on a machine installs Debian packages (about 45 s alone, more on a busy machine).
const SETUP = 600_000;
let real: RealHermes;
let twin: FakeHermes;
const TWIN_KEY = `twin-${crypto.randomUUID()}`;

beforeAll(async () => {
  real = await startRealHermes();
  twin = startFakeHermes({
    generation: "older",
    apiKey: TWIN_KEY,
    maxConcurrentRuns: REAL_HERMES_CAPACITY,
    holdStops: true,
    script: (req) => markerScript(req, { scratch: real.scratch }),
  });
}, SETUP);
afterAll(async () => {
  await twin?.stop();
  await real?.close();
}, SLOW);

/** One server as the wire cases see it. */
interface Server {
  url: string;
  key: string;
  /** The agent, once stopped, gets to its end (the real one does by itself, about 2 s later). */
  letStopFinish(runId: string): void;
}
const servers = (): [Server, Server] => [
  { url: real.url, key: real.apiKey, letStopFinish: () => {} },
  { url: twin.url, key: TWIN_KEY, letStopFinish: (id) => twin.finishStop(id) },
];

/** A value with what differs from run to run replaced: ids, times, durations, the key. */
function normal(v: unknown, key?: string): unknown {
  if (typeof v === "string") return v.replace(/run_[0-9a-f]{32}/g, "<run id>");
  if (key === "timestamp" || key === "created_at" || key === "updated_at") return typeof v === "number" ? "<time>" : v;
  if (key === "duration") return typeof v === "number" ? "<seconds>" : v;
  if (Array.isArray(v)) return v.map((x) => normal(x));
  if (v && typeof v === "object") return Object.entries(v).map(([k, x]) => [k, normal(x, k)]); // key order kept
  return v;
}
const transcript = (blocks: Block[]) => blocks.map((b) => (b.data ? normal(b.data) : b.comment));

async function startRun(s: Server, body: Record<string, unknown>): Promise<string> {
  const r = await call(s.url, "POST", "/v1/runs", { key: s.key, body });
  expect(r.status, r.text).toBe(202);
  expect(Object.keys(r.json)).toEqual(["run_id", "status"]);
  return r.json.run_id;
}

/** Reads a run's events up to (and with) the first `name` event. */
async function readUntil(events: Awaited<ReturnType<typeof openEvents>>, name: string): Promise<Block[]> {
  const out: Block[] = [];
  for (let b = await events.next(); b; b = await events.next()) {
    out.push(b);
    if (b.data?.event === name) return out;
  }
  throw new Error(`the stream ended before ${name}`);
}

describe("the wire: the fake twin answers as the real Hermes 0.18.2 does", () => {
  it(
    "a plain run: data-only frames; three deltas, reasoning.available = the answer, run.completed; a second reader gets 404; session_id is a label, history comes only in the body",
    async () => {
      const session = `wire-${crypto.randomUUID()}`;
      const got = await Promise.all(
        servers().map(async (s) => {
          const id = await startRun(s, { input: "hello wire", session_id: session });
          const events = transcript(await (await openEvents(s.url, id, s.key)).rest());
          const again = await openEvents(s.url, id, s.key);
          const status = (await call(s.url, "GET", `/v1/runs/${id}`, { key: s.key })).json;
          // The same session again: session_id does not bring the first turn (the model sees one user turn)...
          const second = await startRun(s, { input: "who?", session_id: session });
          const labelOnly = (await (await openEvents(s.url, second, s.key)).rest()).find(
            (b) => b.data?.event === "run.completed",
          )!.data.output;
          // ...but Hermes kept both in the session, and conversation_history brings them.
          const messages = (await call(s.url, "GET", `/api/sessions/${session}/messages`, { key: s.key })).json;
          const withHistory = await startRun(s, {
            input: "and now?",
            conversation_history: [
              { role: "user", content: "hello wire" },
              { role: "assistant", content: "hi" },
            ],
          });
          const continued = (await (await openEvents(s.url, withHistory, s.key)).rest()).find(
            (b) => b.data?.event === "run.completed",
          )!.data.output;
          return {
            events,
            again: [again.status, normal(again.body)],
            status: normal(status),
            labelOnly,
            messages: messages.data.map((m: { role: string; content: string }) => [m.role, m.content]),
            messageKeys: Object.keys(messages.data[0]),
            continued,
          };
        }),
      );
      const [r] = got;
      expect(
        r!.events.map((e) => (Array.isArray(e) ? (e as [string, unknown][]).find(([k]) => k === "event")![1] : e)),
      ).toEqual([
        "message.delta",
        "message.delta",
        "message.delta",
        "reasoning.available",
        "run.completed",
        ": stream closed",
      ]);
      expect(r!.again[0]).toBe(404);
      expect(r!.labelOnly).toBe("FAKE-MODEL-OK: who? [user_turns=1]");
      expect(r!.continued).toBe("FAKE-MODEL-OK: and now? [user_turns=2]");
      expect(got[1]).toEqual(r);
    },
    SLOW,
  );

  it(
    "the capabilities: the runs features, no runs_idempotency; /health says 0.18.2; a wrong key is 401 invalid_api_key everywhere",
    async () => {
      const got = await Promise.all(
        servers().map(async (s) => {
          const caps = (await call(s.url, "GET", "/v1/capabilities", { key: s.key })).json;
          const runFeatures = Object.fromEntries(Object.entries(caps.features).filter(([k]) => k.startsWith("run")));
          const health = (await call(s.url, "GET", "/health")).json;
          const refused = await Promise.all(
            ["/v1/capabilities", "/v1/runs/run_x", "/api/sessions/x/messages"].map(async (p) => {
              const r = await call(s.url, "GET", p, { key: "wrong" });
              return [r.status, r.json];
            }),
          );
          const post = await call(s.url, "POST", "/v1/runs", { body: { input: "x" } });
          return { runFeatures, health, refused, post: [post.status, post.json] };
        }),
      );
      expect(got[0].runFeatures).not.toHaveProperty("runs_idempotency");
      expect(got[0].health.version).toBe("0.18.2");
      expect(got[1]).toEqual(got[0]);
    },
    SLOW,
  );

  it(
    'a tool without approval: tool.started, tool.completed, then deltas starting with "\\n\\n"',
    async () => {
      const got = await Promise.all(
        servers().map(async (s) => {
          const id = await startRun(s, { input: "run SAFE-ECHO" });
          return transcript(await (await openEvents(s.url, id, s.key)).rest());
        }),
      );
      expect(JSON.stringify(got[0])).toContain('["delta","\\n\\nFAKE-TOOL-DONE: ');
      expect(got[1]).toEqual(got[0]);
    },
    SLOW,
  );

  for (const choice of ["once", "deny"]) {
    it(
      `an approval answered ${choice}: tool.started first, approval.request without ids, the status without an approval object, the answer, the tool's end and the answer text`,
      async () => {
        const target = `wire-${choice}-${crypto.randomUUID().slice(0, 8)}`;
        const got = await Promise.all(
          servers().map(async (s) => {
            const id = await startRun(s, { input: `clean DANGER-RM:${target}` });
            const events = await openEvents(s.url, id, s.key);
            const asked = transcript(await readUntil(events, "approval.request"));
            const waiting = normal((await call(s.url, "GET", `/v1/runs/${id}`, { key: s.key })).json);
            const answered = await call(s.url, "POST", `/v1/runs/${id}/approval`, { key: s.key, body: { choice } });
            const rest = transcript(await events.rest());
            const late = await call(s.url, "POST", `/v1/runs/${id}/approval`, { key: s.key, body: { choice } });
            return {
              asked,
              waiting,
              answered: [answered.status, normal(answered.json)],
              rest,
              late: [late.status, late.json.error.code],
            };
          }),
        );
        expect(got[1]).toEqual(got[0]);
      },
      SLOW,
    );
  }

  it(
    "a stop: 200 stopping, the status stays stopping until the agent gets out, then a bare run.cancelled and cancelled; a second stop is 404",
    async () => {
      const got = await Promise.all(
        servers().map(async (s) => {
          const id = await startRun(s, { input: "count chunks:30 pace:100" });
          const events = await openEvents(s.url, id, s.key);
          await readUntil(events, "message.delta");
          const stop = await call(s.url, "POST", `/v1/runs/${id}/stop`, { key: s.key });
          const stopping = normal((await call(s.url, "GET", `/v1/runs/${id}`, { key: s.key })).json);
          s.letStopFinish(id);
          const rest = await events.rest();
          const end = rest.filter((b) => b.data?.event !== "message.delta");
          const status = (await call(s.url, "GET", `/v1/runs/${id}`, { key: s.key })).json;
          const again = await call(s.url, "POST", `/v1/runs/${id}/stop`, { key: s.key });
          return {
            stop: [stop.status, normal(stop.json)],
            stopping,
            end: transcript(end),
            status: [status.status, status.last_event],
            again: again.status,
          };
        }),
      );
      expect(got[0].stopping).toContainEqual(["status", "stopping"]);
      expect(got[0].end).toEqual([
        [
          ["event", "run.cancelled"],
          ["run_id", "<run id>"],
          ["timestamp", "<time>"],
        ],
        ": stream closed",
      ]);
      expect(got[1]).toEqual(got[0]);
    },
    SLOW,
  );

  it(
    "over max_concurrent_runs: 429 rate_limit_exceeded with Retry-After: 1",
    async () => {
      const got = await Promise.all(
        servers().map(async (s) => {
          const held = await Promise.all(
            Array.from({ length: REAL_HERMES_CAPACITY }, () => startRun(s, { input: "hold sleep:2" })),
          );
          const over = await call(s.url, "POST", "/v1/runs", { key: s.key, body: { input: "one more" } });
          for (const id of held) await (await openEvents(s.url, id, s.key)).rest();
          return [over.status, over.json, over.headers.get("retry-after")];
        }),
      );
      expect(got[0][0]).toBe(429);
      expect(got[1]).toEqual(got[0]);
    },
    SLOW,
  );
});

describe("the CLI against a node on the real Hermes", () => {
  let fleet: Fleet;
  let beta: RunningNode;
  const quiet = createLogger(() => {}, "warn");
  async function cli(...args: string[]) {
    const io: Io & { out(): string; err(): string } = bufferIo({});
    const code = await runCli(["--home", fleet.homes.alpha!, ...args], io);
    return { code, out: io.out(), err: io.err() };
  }

  beforeAll(async () => {
    fleet = await makeFleet(["alpha", "beta"]);
    beta = await startNode(
      fleet.homes.beta!,
      { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "hermes", hermesUrl: real.url, hermesApiKey: real.apiKey },
      quiet,
    );
    expect((await cli("peers", "add", "beta", beta.url)).code).toBe(0);
  }, SLOW);
  afterAll(async () => {
    await beta?.stop();
    fleet?.cleanup();
  });

  it(
    "send --wait stops at the approval (exit 6); send --task-id ID --task no --wait then waits for the task's end (exit 0), not the question it answered",
    async () => {
      const asked = await cli("send", "--agent", "beta", "--task", "tidy up DANGER-RM:cli", "--wait");
      expect(asked.code, asked.err).toBe(6);
      const id = /^task (\S+) input-required \(peer 'beta'\)/m.exec(asked.err)![1]!;
      expect(asked.err).toContain(`Command: rm -rf ${real.scratch}/cli`);
      const answered = await cli("send", "--agent", "beta", "--task-id", id, "--task", "no", "--wait");
      expect(answered.code, answered.err).toBe(0);
      expect(answered.out).toMatch(
        /^FAKE-TOOL-DONE: \{"output": "", "exit_code": -1, "error": "BLOCKED: Command denied by user\./,
      );
      expect(answered.err).toContain(`task ${id} completed (peer 'beta')`);
    },
    SLOW,
  );
});

// Last: its last scenario restarts the server.
hermesScenarios(
  "the real Hermes 0.18.2",
  async () => ({
    url: real.url,
    apiKey: real.apiKey,
    scratch: real.scratch,
    realTools: true,
    generation: "older",
    capacity: REAL_HERMES_CAPACITY,
    shutdown: () => real.shutdown(),
    up: () => real.up(),
    close: async () => {}, // the file's server, closed after all
  }),
  SLOW,
);
