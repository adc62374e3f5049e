/**
 * Durability of the compiled node, end to end: real binary, real TLS, real SQLite home; the only fake is the
 * model (a chat-completions server that holds the requests whose text contains "[hold]", optionally after
 * streaming the first words of its answer).
 *
 *  (a) kill -9 mid-flight: after a restart on the same home every task reaches a recorded terminal state
 *      (per the executor's restart policy: run again, or FAILED "interrupted"), finished ones keep their
 *      results and are not run again, and a task that keeps bringing the node down is not run forever.
 *  (b) SIGTERM with a task running: it finishes within the grace period if the model answers in time,
 *      otherwise it ends FAILED "interrupted"; callers still connected hear the outcome either way.
 *  (c) SubscribeToTask reconnects with Last-Event-ID lose nothing and repeat nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel, type GatedModelOptions } from "../fakes/gated-model";
import { rpc, userMessage, type RpcReply } from "../helpers/rpc";
import { openSse, type SseEvent } from "../helpers/sse";
import { serveWatched, type WatchedServe } from "../helpers/watched-serve";

let fleet: Fleet;
let alpha: TlsIdentity;
const nodes: WatchedServe[] = [];
const models: GatedModel[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["beta", "gamma", "delta", "epsilon", "alpha"]);
  alpha = fleet.identity("alpha");
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  for (const m of models) m.stop();
  fleet?.cleanup();
});

function model(options: GatedModelOptions = {}): GatedModel {
  const m = startGatedModel(options);
  models.push(m);
  return m;
}

async function serve(home: string, m: GatedModel): Promise<WatchedServe> {
  const node = await serveWatched(home, [
    "--executor",
    "openai",
    "--model-url",
    m.url,
    "--model",
    "test-model",
    "--max-concurrent",
    "4",
    "--caller-share",
    "1",
  ]);
  nodes.push(node);
  return node;
}

const TERMINAL = ["TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"];
const statusText = (task: any): string =>
  (task.status?.message?.parts ?? []).map((p: { text?: string }) => p.text ?? "").join("\n");
const firstUserText = (task: any): string =>
  task.history?.find((m: any) => m.role === "ROLE_USER")?.parts[0]?.text ?? "";
const artifactText = (task: any): string =>
  (task.artifacts?.[0]?.parts ?? []).map((p: { text?: string }) => p.text ?? "").join("");

async function call(url: string, method: string, params: unknown): Promise<any> {
  const r = await rpc(url, alpha, method, params);
  expect(r.status, r.text).toBe(200);
  expect(r.body?.error, r.text).toBeUndefined();
  return r.body.result;
}

const sendMessage = (url: string, text: string, configuration?: Record<string, unknown>) =>
  call(url, "SendMessage", { message: userMessage(text), ...(configuration ? { configuration } : {}) }).then(
    (r) => r.task,
  );
const getTask = (url: string, id: string) => call(url, "GetTask", { id });

/** A blocking SendMessage whose connection may be cut: resolves either way, saying which. */
const blockingSend = (url: string, text: string): Promise<{ reply?: RpcReply; cut?: string }> =>
  rpc(url, alpha, "SendMessage", { message: userMessage(text) }).then(
    (reply) => ({ reply }),
    (err: Error) => ({ cut: err.message }),
  );

/** Every task of the caller on that node (one page: these tests make few). */
async function allTasks(url: string): Promise<any[]> {
  const list = await call(url, "ListTasks", { pageSize: 100, includeArtifacts: true });
  expect(list.nextPageToken).toBe("");
  expect(list.tasks).toHaveLength(list.totalSize);
  return list.tasks;
}

/** The task's whole event log from the start, followed live until the task settles (the stream's end). */
async function eventLog(url: string, id: string): Promise<SseEvent[]> {
  const events = await (await openSse(url, alpha, "SubscribeToTask", { id }, { "last-event-id": "0" })).rest();
  expect(events[0]?.data.result.task.id).toBe(id);
  return events.slice(1);
}

/** The id'd events: ids consecutive from `from`, none repeated. */
function expectConsecutive(events: SseEvent[], from = 1): number[] {
  const ids = events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
  expect(ids).toEqual(ids.map((_, i) => from + i));
  return ids;
}

/** The answer a client builds from artifactUpdate events: `append` extends the artifact, otherwise replaces it. */
function assembled(events: SseEvent[]): string {
  let text = "";
  for (const e of events) {
    const u = e.data.result.artifactUpdate;
    if (!u) continue;
    const t = u.artifact.parts.map((p: { text?: string }) => p.text ?? "").join("");
    text = u.append ? text + t : t;
  }
  return text;
}

const finalState = (events: SseEvent[]) => events.at(-1)?.data.result.statusUpdate?.status.state;

describe("(a) kill -9 while tasks run", () => {
  it("after a restart every task reaches a recorded terminal state; finished tasks keep their results and are not run again", async () => {
    const home = fleet.homes.beta;
    // Held tasks stream their first word, then wait: a partial answer exists when the node dies.
    const m = model({ holdAfterChunks: 1 });
    const node = await serve(home, m);

    // Finished before the crash: the blocking answer comes only once the outcome is committed.
    const finished: any[] = [];
    for (let i = 0; i < 2; i++) {
      const task = await sendMessage(node.url, `finished ${i} ${crypto.randomUUID()}`);
      expect(task.status.state).toBe("TASK_STATE_COMPLETED");
      finished.push(task);
    }

    // Running at the crash: two accepted with returnImmediately, one blocking caller, one streaming caller.
    const immediate: any[] = [];
    for (let i = 0; i < 2; i++) {
      const task = await sendMessage(node.url, `[hold] immediate ${i} ${crypto.randomUUID()}`, {
        returnImmediately: true,
      });
      expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]).toContain(task.status.state);
      immediate.push(task);
    }
    const blockingText = `[hold] blocking ${crypto.randomUUID()}`;
    const blocking = blockingSend(node.url, blockingText);
    const streamingText = `[hold] streaming ${crypto.randomUUID()}`;
    const streaming = await openSse(node.url, alpha, "SendStreamingMessage", { message: userMessage(streamingText) });
    const streamedId: string = (await streaming.next())?.data.result.task.id;
    expect(streamedId).toEqual(expect.any(String));
    // Its first answer chunk has been committed (a subscriber only ever sees committed events).
    for (let e = await streaming.next(); e && !e.data.result.artifactUpdate; e = await streaming.next());
    await m.received(finished.length + 4);
    // A fifth one waits in the queue (--max-concurrent 4): accepted, never started.
    const queuedText = `[hold] queued ${crypto.randomUUID()}`;
    const queued = await sendMessage(node.url, queuedText, { returnImmediately: true });
    expect(queued.status.state).toBe("TASK_STATE_SUBMITTED");

    await node.stop("SIGKILL");
    expect(await blocking).toHaveProperty("cut");
    streaming.close();

    m.release(); // the model answers everything from now on
    const before = m.requests.length;
    const again = await serve(home, m);
    const recovery = again.lines().find((l) => l.msg === "found tasks the last stop interrupted");
    expect(recovery, again.log()).toBeDefined();
    const { resumed, failed, policy } = recovery as unknown as { resumed: number; failed: number; policy: string };
    expect(resumed + failed).toBe(5);

    const tasks = await allTasks(again.url);
    expect(tasks).toHaveLength(7);
    const blockingTask = tasks.find((t) => firstUserText(t) === blockingText);
    const interrupted = new Map<string, string>([
      ...immediate.map((t) => [t.id, firstUserText(t)] as [string, string]),
      [streamedId, streamingText],
      [blockingTask?.id, blockingText],
      [queued.id, queuedText],
    ]);
    expect(interrupted.size).toBe(5);

    for (const [id, text] of interrupted) {
      // Each one's log runs on from before the crash without a gap, to its recorded end.
      const events = await eventLog(again.url, id);
      expectConsecutive(events);
      expect(TERMINAL).toContain(finalState(events));
      const t = await getTask(again.url, id);
      expect(t.status.state).toBe(finalState(events));
      if (policy === "fail") {
        expect(t.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(t)).toMatch(/interrupted/);
        expect(t.artifacts ?? []).toEqual([]);
      } else {
        // Run again from its message: the answer is the new run's alone (no leftover of the half-streamed one),
        // both as stored and as a client following the events across the crash builds it.
        expect(t.status.state, statusText(t)).toBe("TASK_STATE_COMPLETED");
        expect(artifactText(t)).toBe(`echo: ${text}`);
        expect(assembled(events)).toBe(`echo: ${text}`);
      }
    }
    const asked = m.requests.slice(before).map((r) => r.text);
    if (policy === "fail") expect(asked).toEqual([]);
    else expect(asked.sort()).toEqual([...interrupted.values()].sort());

    for (const f of finished) {
      const t = await getTask(again.url, f.id);
      expect(t.status.state).toBe("TASK_STATE_COMPLETED");
      expect(t.artifacts).toEqual(f.artifacts);
      expect(artifactText(t)).toBe(`echo: ${firstUserText(f)}`);
      expect(asked).not.toContain(firstUserText(f));
    }

    // And the restarted node takes new work.
    const fresh = await sendMessage(again.url, `after the crash ${crypto.randomUUID()}`);
    expect(fresh.status.state).toBe("TASK_STATE_COMPLETED");
    expect(await again.stop("SIGTERM")).toBe(0);
  });

  it("a task that brings the node down every time it runs is not run forever: it ends FAILED 'interrupted'", async () => {
    const home = fleet.homes.epsilon;
    const m = model(); // never answers "[hold]"
    const text = `[hold] poison ${crypto.randomUUID()}`;
    let node = await serve(home, m);
    const task = await sendMessage(node.url, text, { returnImmediately: true });
    let runs = 0;
    let state = "";
    for (let restart = 0; restart < 6 && !TERMINAL.includes(state); restart++) {
      await m.received(runs + 1); // it is running (again)
      runs++;
      await node.stop("SIGKILL");
      node = await serve(home, m);
      state = (await getTask(node.url, task.id)).status.state;
    }
    const t = await getTask(node.url, task.id);
    expect(t.status.state).toBe("TASK_STATE_FAILED");
    expect(statusText(t)).toMatch(/interrupted/);
    expect(runs).toBeLessThanOrEqual(3);
    expect(m.requests.map((r) => r.text)).toEqual(Array(runs).fill(text));
    const events = await eventLog(node.url, task.id);
    expectConsecutive(events);
    expect(finalState(events)).toBe("TASK_STATE_FAILED");
    expect(await node.stop("SIGTERM")).toBe(0);
    expect(m.requests).toHaveLength(runs);
  });
});

describe("(b) SIGTERM with a task running", () => {
  const home = () => fleet.homes.gamma;
  const grace = (seconds: number) =>
    writeFileSync(join(home(), "config.toml"), `shutdown_grace_seconds = ${seconds}\n`);

  describe("the model answers within the grace period", () => {
    const immediateText = `[hold] graceful immediate ${crypto.randomUUID()}`;
    const blockingText = `[hold] graceful blocking ${crypto.randomUUID()}`;
    let blocking: { reply?: RpcReply; cut?: string };
    let followed: { events: SseEvent[]; error?: string };

    it("the task completes, the node exits 0, and after a restart the task is COMPLETED with its answer", async () => {
      grace(60);
      const m = model();
      const node = await serve(home(), m);
      const immediate = await sendMessage(node.url, immediateText, { returnImmediately: true });
      const pending = blockingSend(node.url, blockingText);
      await m.received(2);
      const subscriber = await openSse(node.url, alpha, "SubscribeToTask", { id: immediate.id });
      expect((await subscriber.next())?.data.result.task.id).toBe(immediate.id);

      node.signal("SIGTERM");
      await node.waitForLine({ msg: "stopping", signal: "SIGTERM" });
      // The process is still running, waiting for its tasks: now the model answers.
      m.release();
      [followed, blocking] = await Promise.all([subscriber.settle(), pending]);
      expect(await node.exited).toBe(0);
      expect(m.requests.every((r) => r.answered && !r.wasAborted)).toBe(true);

      const again = await serve(home(), m);
      expect(again.log()).not.toMatch(/interrupted/);
      expect(again.lines().some((l) => l.msg === "found tasks the last stop interrupted")).toBe(false);
      const tasks = await allTasks(again.url);
      expect(tasks).toHaveLength(2);
      for (const t of tasks) {
        expect(t.status.state).toBe("TASK_STATE_COMPLETED");
        expect(artifactText(t)).toBe(`echo: ${firstUserText(t)}`);
      }
      expect(m.requests).toHaveLength(2); // nothing was run twice
      expect(await again.stop("SIGTERM")).toBe(0);
    });

    it("callers still connected hear the outcome before the node closes their connections", () => {
      expect
        .soft(followed.error, `subscriber cut after ${JSON.stringify(followed.events.map((e) => e.id))}`)
        .toBeUndefined();
      expect.soft(finalState(followed.events)).toBe("TASK_STATE_COMPLETED");
      expect.soft(assembled(followed.events)).toBe(`echo: ${immediateText}`);
      expect.soft(blocking.cut).toBeUndefined();
      expect.soft(blocking.reply?.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
      expect.soft(artifactText(blocking.reply?.body.result.task)).toBe(`echo: ${blockingText}`);
    });
  });

  describe("the model does not answer within the grace period", () => {
    let blocking: { reply?: RpcReply; cut?: string };
    let followed: { events: SseEvent[]; error?: string };

    it("the model request is aborted, the node exits 0, and the task is recorded FAILED 'interrupted' (not left for the next start)", async () => {
      grace(1);
      const m = model();
      const node = await serve(home(), m);
      const text = `[hold] never answered ${crypto.randomUUID()}`;
      const task = await sendMessage(node.url, text, { returnImmediately: true });
      const request = await m.arrival(text);
      const blockingText = `[hold] never answered, blocking ${crypto.randomUUID()}`;
      const pending = blockingSend(node.url, blockingText);
      const blockingRequest = await m.arrival(blockingText);
      const subscriber = await openSse(node.url, alpha, "SubscribeToTask", { id: task.id });
      expect((await subscriber.next())?.data.result.task.id).toBe(task.id);

      node.signal("SIGTERM");
      await node.waitForLine({ msg: "stopping", signal: "SIGTERM" });
      await Promise.all([request.aborted, blockingRequest.aborted]); // given up when the grace period ran out
      [followed, blocking] = await Promise.all([subscriber.settle(), pending]);
      expect(await node.exited).toBe(0);
      expect(request.answered).toBe(false);

      m.release();
      const again = await serve(home(), m);
      // Recorded by the stopping node itself: nothing is left for the next start to recover.
      expect(again.lines().some((l) => l.msg === "found tasks the last stop interrupted")).toBe(false);
      const tasks = (await allTasks(again.url)).filter((t) => [text, blockingText].includes(firstUserText(t)));
      expect(tasks).toHaveLength(2);
      for (const t of tasks) {
        expect(t.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(t)).toMatch(/interrupted/);
        expect(t.artifacts ?? []).toEqual([]);
      }
      expect(m.requests.map((r) => r.text).sort()).toEqual([text, blockingText].sort()); // not run again
      expect(await again.stop("SIGTERM")).toBe(0);
    });

    it("callers still connected hear the FAILED outcome before the node closes their connections", () => {
      expect
        .soft(followed.error, `subscriber cut after ${JSON.stringify(followed.events.map((e) => e.id))}`)
        .toBeUndefined();
      expect.soft(finalState(followed.events)).toBe("TASK_STATE_FAILED");
      expect.soft(blocking.cut).toBeUndefined();
      expect.soft(blocking.reply?.body.result.task.status.state).toBe("TASK_STATE_FAILED");
      expect.soft(statusText(blocking.reply?.body.result.task)).toMatch(/interrupted/);
    });
  });
});

describe("(c) SubscribeToTask reconnects with Last-Event-ID", () => {
  it("the union of what a reconnecting client saw has consecutive ids, no duplicates, and ends with the terminal status", async () => {
    // The answer streams two words, waits for release, then streams the rest: events before and after.
    const m = model({ holdAfterChunks: 2, reply: (t) => `echo: ${t} and then some more words` });
    const node = await serve(fleet.homes.delta, m);
    const text = `[hold] resumable ${crypto.randomUUID()}`;
    const answer = `echo: ${text} and then some more words`;
    const seen: SseEvent[] = [];
    const lastId = () => seen.filter((e) => e.id !== undefined).at(-1)!.id!;

    // First connection: the stream that started the task; read its first two numbered events, then drop it.
    const first = await openSse(node.url, alpha, "SendStreamingMessage", { message: userMessage(text) });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const opening = await first.next();
    const taskId: string = opening?.data.result.task.id;
    expect(taskId).toEqual(expect.any(String));
    expect(opening?.id).toBeUndefined();
    while (seen.length < 2) seen.push((await first.next())!);
    first.close();
    expect(seen.map((e) => e.id)).toEqual(["1", "2"]);

    // Second connection, while the task still runs: the Task, then everything after the last id seen.
    const second = await openSse(node.url, alpha, "SubscribeToTask", { id: taskId }, { "last-event-id": lastId() });
    const reopened = await second.next();
    expect(reopened?.data.result.task.id).toBe(taskId);
    expect(reopened?.id).toBeUndefined();
    // An independent subscriber, to know (by its stream's end, not a timer) when the task is over.
    const observer = await openSse(node.url, alpha, "SubscribeToTask", { id: taskId });
    expect((await observer.next())?.data.result.task.id).toBe(taskId);

    await m.chunks(text, 2);
    m.release(text);
    for (let i = 0; i < 2; i++) seen.push((await second.next())!);
    second.close(); // dropped again, with more on its way

    const observed = await observer.rest();
    expect(finalState(observed)).toBe("TASK_STATE_COMPLETED");

    // Third connection, after the task ended: what the client missed, then the stream closes by itself.
    const third = await openSse(node.url, alpha, "SubscribeToTask", { id: taskId }, { "last-event-id": lastId() });
    const rest = await third.rest();
    expect(rest[0]?.data.result.task.id).toBe(taskId);
    expect(rest[0]?.data.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(rest.length).toBeGreaterThan(1); // there was something to catch up on
    seen.push(...rest.slice(1));

    // One unbroken log: 1, 2, 3, ... with the terminal status last and nothing terminal before it.
    const ids = expectConsecutive(seen, 1);
    expect(ids.length).toBe(seen.length);
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(finalState(seen)).toBe("TASK_STATE_COMPLETED");
    expect(seen.at(-1)!.data.result.statusUpdate.taskId).toBe(taskId);
    for (const e of seen.slice(0, -1)) expect(TERMINAL).not.toContain(e.data.result.statusUpdate?.status.state);
    expect(assembled(seen)).toBe(answer);

    // What the observer got live is exactly what the reconnecting client got under the same ids.
    const byId = new Map(seen.map((e) => [e.id, e.data.result]));
    for (const e of observed.filter((x) => x.id !== undefined)) expect(e.data.result).toEqual(byId.get(e.id));

    // A full replay from the start is the same log, and the stored task agrees with it.
    const replay = await eventLog(node.url, taskId);
    expect(replay.map((e) => [e.id, e.data.result])).toEqual(seen.map((e) => [e.id, e.data.result]));
    expect(artifactText(await getTask(node.url, taskId))).toBe(answer);
    expect(await node.stop("SIGTERM")).toBe(0);
  });
});
