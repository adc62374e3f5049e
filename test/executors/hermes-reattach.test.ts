/**
 * HermesExecutor across restarts and load, against the fake Hermes server as both generations: a node
 * restarted during a run or during an approval re-attaches by polling GET /v1/runs/{id} (the real server gives
 * a run's events only once) and never starts a second run; Hermes at capacity (429/503) is waited for; Hermes
 * itself restarting ends the task with the reason; every task of one conversation shares one Hermes session.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sessionId } from "../../src/executors/hermes-executor";
import { hermes, startFakeHermes, type FakeHermes, type FakeHermesOptions } from "../fakes/hermes/server";
import { answerText, startHermesNode, userMessage, type HermesNode } from "../helpers/hermes-node";

const KEY = "hermes-test-key";
const fakes: FakeHermes[] = [];
const nodes: HermesNode[] = [];

afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
  for (const f of fakes.splice(0)) await f.stop();
});

async function setup(
  options: FakeHermesOptions,
  maxConcurrent?: number,
): Promise<{ fake: FakeHermes; node: HermesNode }> {
  const fake = startFakeHermes({ apiKey: KEY, ...options });
  fakes.push(fake);
  const node = await startHermesNode(fake, { apiKey: KEY, maxConcurrent });
  nodes.push(node);
  return { fake, node };
}

const DEPLOY = { command: "kubectl rollout restart deploy/web", description: "restart a production deployment" };
const later = { configuration: { returnImmediately: true } };
const startRuns = (fake: FakeHermes) => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/runs");
const eventStreams = (fake: FakeHermes) => fake.requests.filter((r) => r.path.endsWith("/events"));

describe.each(["newer", "older"] as const)("HermesExecutor re-attaching to a %s Hermes server", (generation) => {
  it("a node restarted during a run re-attaches by polling the run's status, never opens its events again, and never starts a second run", async () => {
    const { fake, node } = await setup({
      generation,
      script: [hermes.delta("Compiling. "), hermes.gate("build"), hermes.delta("Built in 3 s."), hermes.completed()],
    });
    const r = await node.handler.sendMessage(
      { message: userMessage("build it"), ...later },
      { caller: { name: "alpha", fingerprint: "A" } },
    );
    const taskId = (r as { task: { id: string } }).task.id;
    const run = await fake.gateReached("build");
    await fake.streamOpened(run.id); // the executor opens the events only once the run id is durable

    const recovered = await node.restart();
    expect(recovered).toEqual({ resumed: 1, failed: 0 });
    expect((await node.get(taskId)).status.state).toBe("TASK_STATE_WORKING");
    await fake.requestReceived((q) => q.method === "GET" && q.path === `/v1/runs/${run.id}`);
    fake.release("build");
    const done = await node.reach(taskId, (t) => t.status.state === "TASK_STATE_COMPLETED");
    // the run's output, not only what streamed after the restart
    expect(answerText(done)).toBe("Compiling. Built in 3 s.");
    expect(done.metadata?.["hermes/usage"]).toEqual(expect.objectContaining({ total_tokens: expect.any(Number) }));
    expect(startRuns(fake)).toHaveLength(1); // also on the older server, which ignores Idempotency-Key
    expect(fake.runs).toHaveLength(1);
    expect(eventStreams(fake)).toHaveLength(1);
  });

  it("a node restarted while the task waits for an approval: the answer goes to the same run, which is then followed by polling", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.approval(DEPLOY, { deny: [hermes.completed("not restarted")] }),
        hermes.delta("Restarted."),
        hermes.completed(),
      ],
    });
    const asked = await node.send("restart web");
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const recovered = await node.restart();
    expect(recovered).toEqual({ resumed: 0, failed: 0 }); // it waits for input: its answer starts it again
    const stored = await node.get(asked.id);
    expect(stored.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(stored.status.message?.parts[0]?.text).toContain(DEPLOY.command);

    // A bad answer is still refused with the run's choices, by the restarted node.
    await expect(node.answer(asked.id, "perhaps")).rejects.toMatchObject({ code: -32602 });
    const done = await node.answer(asked.id, "yes");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Restarted.");
    const answered = fake.runs[0]!.answers;
    expect(answered.map((a) => a.choice)).toEqual(["once"]);
    if (generation === "newer")
      expect(answered[0]!.requestId).toBe(
        (stored.status.message?.metadata?.["hermes/approval"] as { request_id: string }).request_id,
      );
    expect(startRuns(fake)).toHaveLength(1);
    expect(eventStreams(fake)).toHaveLength(1);
  });

  it("an answer that reaches Hermes after it denied the approval on its timeout (409) is reported as too late, and the task ends as the run did", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.approval(DEPLOY, { timeout: [hermes.delta("Left it alone.")] }),
        hermes.gate("after"),
        hermes.completed(),
      ],
    });
    const asked = await node.send("restart web");
    await node.restart(); // the answer will reach a node that follows the run by polling
    expect(fake.expireApproval()).toBe(true);
    const answering = node.answer(asked.id, "yes");
    const late = await fake.requestReceived((q) => q.path.endsWith("/approval") && q.status === 409);
    expect(late.body).toMatchObject({ choice: "once" });
    fake.release("after");
    const done = await answering;
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Left it alone.");
    const log: string[] = [];
    for await (const item of await node.handler.subscribeToTask(
      { id: asked.id },
      { caller: { name: "alpha", fingerprint: "A" } },
      0,
    )) {
      const u = (item.response as any).statusUpdate;
      if (u?.status.message) log.push(u.status.message.parts[0].text);
    }
    expect(log).toContain(
      `the answer "once" came too late: Hermes no longer waited for that approval (approval_not_pending); it denies approvals nobody answers in time, and the run went on`,
    );
    expect(fake.runs[0]!.answers).toHaveLength(0);
    expect(startRuns(fake)).toHaveLength(1);
  });

  it("a restarted node that finds the run waiting for an approval asks the person, then answers by polling", async () => {
    const { fake, node } = await setup({
      generation,
      script: [hermes.gate("think"), hermes.approval(DEPLOY), hermes.delta("Done."), hermes.completed()],
    });
    const r = await node.handler.sendMessage(
      { message: userMessage("restart web"), ...later },
      { caller: { name: "alpha", fingerprint: "A" } },
    );
    const taskId = (r as { task: { id: string } }).task.id;
    const run = await fake.gateReached("think");
    await fake.streamOpened(run.id); // the executor opens the events only once the run id is durable
    await node.restart();
    fake.release("think");
    const asked = await node.reach(taskId, (t) => t.status.state === "TASK_STATE_INPUT_REQUIRED");
    if (generation === "newer") expect(asked.status.message?.parts[0]?.text).toContain(DEPLOY.command);
    else expect(asked.status.message?.parts[0]?.text).toContain("Answer with one of: once, session, always, deny");
    const done = await node.answer(taskId, "ok");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Done.");
    expect(startRuns(fake)).toHaveLength(1);
  });

  it("waits while Hermes is at capacity (429), saying so in the task's status, then starts the run", async () => {
    const { fake, node } = await setup({
      generation,
      maxConcurrentRuns: 1,
      script: (req) =>
        req.userMessage === "blocker"
          ? [hermes.gate("blocker"), hermes.completed("b")]
          : [hermes.delta("ran"), hermes.completed()],
    });
    // Someone else's run takes Hermes's only slot.
    const blocker = await fetch(`${fake.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ input: "blocker" }),
    });
    expect(blocker.status).toBe(202);
    const r = await node.handler.sendMessage(
      { message: userMessage("mine"), ...later },
      { caller: { name: "alpha", fingerprint: "A" } },
    );
    const taskId = (r as { task: { id: string } }).task.id;
    const busy = await fake.requestReceived(
      (q) => q.path === "/v1/runs" && q.status === 429 && q.body?.input === "mine",
    );
    expect(busy.status).toBe(429);
    const waiting = await node.reach(taskId, (t) =>
      /waiting for Hermes capacity/.test(t.status.message?.parts[0]?.text ?? ""),
    );
    expect(waiting.status.state).toBe("TASK_STATE_WORKING");
    expect(waiting.status.message?.parts[0]?.text).toContain("HTTP 429 rate_limit_exceeded");
    fake.release("blocker");
    await fake.finished(fake.runs[0]!.id);
    // older counts unread queues until swept
    if (generation === "older") fake.sweep({ transports: true, statuses: false });
    const done = await node.reach(taskId, (t) => t.status.state === "TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("ran");
    expect(fake.runs.filter((x) => x.request.userMessage === "mine")).toHaveLength(1);
  });

  it("Hermes restarting mid-run ends the task FAILED with the reason", async () => {
    const { fake, node } = await setup({
      generation,
      script: [hermes.delta("Working. "), hermes.gate("never"), hermes.completed()],
    });
    const r = await node.handler.sendMessage(
      { message: userMessage("long"), ...later },
      { caller: { name: "alpha", fingerprint: "A" } },
    );
    const taskId = (r as { task: { id: string } }).task.id;
    const run = await fake.gateReached("never");
    await fake.streamOpened(run.id); // the executor opens the events only once the run id is durable
    await fake.restart();
    const failed = await node.reach(taskId, (t) => t.status.state === "TASK_STATE_FAILED");
    const why = failed.status.message?.parts[0]?.text;
    if (generation === "newer")
      expect(why).toBe(
        `Hermes restarted while it ran this task (run ${run.id} was interrupted: The gateway restarted before this run settled.); send the task again`,
      );
    else
      expect(why).toBe(
        `Hermes at ${fake.url} no longer knows run ${run.id} (it restarted, or the run ended over an hour ago); send the task again`,
      );
    expect(startRuns(fake)).toHaveLength(1);
  });
});

describe("conversations on Hermes", () => {
  it("every task of one context sends the same session_id; a new context, or another caller's same context, gets another", async () => {
    const { fake, node } = await setup({
      generation: "newer",
      script: (req) => [hermes.delta(`re: ${String(req.userMessage)}`), hermes.completed()],
    });
    const first = await node.send("my name is Ada", { contextId: "conv-1" });
    const second = await node.send("what is my name?", { contextId: "conv-1" });
    const other = await node.send("hello", { contextId: "conv-2" });
    const beta = await node.send("hi", { contextId: "conv-1" }, "beta");
    const sessions = fake.runs.map((r) => r.request.sessionId);
    expect(sessions[0]).toBe(sessionId("alpha", "conv-1"));
    expect(sessions[1]).toBe(sessions[0]);
    expect(sessions[2]).toBe(sessionId("alpha", "conv-2"));
    expect(sessions[3]).toBe(sessionId("beta", "conv-1"));
    expect(new Set(sessions).size).toBe(3);
    expect([first, second, other, beta].every((t) => t.status.state === "TASK_STATE_COMPLETED")).toBe(true);
    // A conversation the node named (no contextId): its follow-up continues the same session.
    const named = await node.send("start");
    await node.send("continue", { contextId: named.contextId });
    expect(fake.runs[5]!.request.sessionId).toBe(fake.runs[4]!.request.sessionId);
  });
});
