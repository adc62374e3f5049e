/**
 * HermesExecutor against the fake Hermes server (a twin of the real runs API, test/fakes/hermes/server.ts), as
 * both server generations, through the node's task core on a real SQLite store: streaming, tools, approvals
 * answered over A2A while the run's one event stream stays open, cancel, errors and readiness. Restarts,
 * polling, capacity and conversations are in hermes-reattach.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sessionId } from "../../src/executors/hermes-executor";
import { HermesExecutor } from "../../src/executors/hermes-executor";
import { A2AError } from "../../src/protocol/errors";
import type { Task } from "../../src/protocol/types";
import { hermes, startFakeHermes, type FakeHermes, type FakeHermesOptions } from "../fakes/hermes/server";
import { answerText, startHermesNode, userMessage, who, type HermesNode } from "../helpers/hermes-node";

const KEY = "hermes-test-key";
const fakes: FakeHermes[] = [];
const nodes: HermesNode[] = [];

afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
  for (const f of fakes.splice(0)) await f.stop();
});

async function setup(options: FakeHermesOptions): Promise<{ fake: FakeHermes; node: HermesNode }> {
  const fake = startFakeHermes({ apiKey: KEY, ...options });
  fakes.push(fake);
  const node = await startHermesNode(fake, { apiKey: KEY });
  nodes.push(node);
  return { fake, node };
}

async function refused(p: Promise<unknown>): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  return err as A2AError;
}

const DEPLOY = { command: "kubectl rollout restart deploy/web", description: "restart a production deployment" };

describe.each(["newer", "older"] as const)("HermesExecutor against a %s Hermes server", (generation) => {
  it("streams deltas, turns tools and real reasoning into status updates, and ends with run.completed's output as the answer (Hermes's copies of each message's text stay in its metadata)", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.delta("Let me look at the disks. "),
        ...hermes.tool("terminal", "df -h", { duration: 0.5 }),
        hermes.reasoning("40% is fine"),
        hermes.delta("The disk is 40% full."),
        hermes.completed(),
      ],
    });
    const items = await node.stream({ message: userMessage("how full is the disk?", { contextId: "ctx-disk" }) });
    const task = (items[0]!.response as { task: Task }).task;
    const updates = items.slice(1).map((i) => i.response as any);

    const chunks = updates.filter((u) => u.artifactUpdate).map((u) => u.artifactUpdate);
    expect(chunks.map((c) => [c.artifact.parts[0].text, c.append === true, c.lastChunk === true])).toEqual([
      ["Let me look at the disks. ", false, false],
      ["\n\nThe disk is 40% full.", true, false], // Hermes's paragraph break after the tool call, inside the text
      // The final artifact is the run's answer alone, without the narration streamed before the tool call.
      ["The disk is 40% full.", false, true],
    ]);
    const statuses = updates.filter((u) => u.statusUpdate).map((u) => u.statusUpdate);
    const progress = statuses.filter((s) => s.metadata?.hermes);
    expect(progress.map((s) => s.status.message.parts[0].text)).toEqual([
      "running terminal: df -h",
      "terminal finished after 0.5 s",
      "thinking: 40% is fine",
    ]);
    expect(progress.map((s) => s.metadata.hermes)).toEqual([
      expect.objectContaining({ event: "tool.started", tool: "terminal", preview: "df -h" }),
      expect.objectContaining({ event: "tool.completed", tool: "terminal", duration: 0.5, error: false }),
      expect.objectContaining({ event: "reasoning.available", text: "40% is fine" }),
    ]);
    expect(statuses.at(-1).status.state).toBe("TASK_STATE_COMPLETED");

    const done = await node.get(task.id);
    // reasoning.available also carried the narration and the answer: kept with the answer, not shown as thinking.
    const said = [
      expect.objectContaining({ event: "reasoning.available", text: "Let me look at the disks." }),
      expect.objectContaining({ event: "reasoning.available", text: "The disk is 40% full." }),
    ];
    expect(done.artifacts).toEqual([
      {
        artifactId: `${task.id}-answer`,
        name: "answer",
        parts: [{ text: "The disk is 40% full." }],
        metadata: { hermes: { "reasoning.available": said } },
      },
    ]);
    expect(done.metadata?.["hermes/runId"]).toBe(fake.runs[0]!.id);
    expect(done.metadata?.["hermes/usage"]).toEqual(
      expect.objectContaining({ output_tokens: expect.any(Number), total_tokens: expect.any(Number) }),
    );

    // What reached Hermes: the text, the conversation's session, the task id as Idempotency-Key, the key.
    const run = fake.runs[0]!;
    expect(run.request.input).toBe("how full is the disk?");
    expect(run.request.sessionId).toBe(sessionId("alpha", "ctx-disk"));
    expect(run.request.headers["idempotency-key"]).toBe(task.id);
    expect(run.request.body).not.toHaveProperty("metadata");
    expect(fake.requests.every((r) => r.path === "/health" || r.bearer === KEY)).toBe(true);
    expect(run.streamsOpened).toBe(1);
  });

  it("an approval makes the task INPUT_REQUIRED with the command, why, and the choices, while the run's stream stays open; 'once' goes on", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.delta("Restarting. "),
        hermes.approval(DEPLOY, { deny: [hermes.delta("Not restarting."), hermes.completed()] }),
        hermes.delta("Restarted."),
        hermes.completed(),
      ],
    });
    const asked = await node.send("restart web");
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const text = asked.status.message!.parts[0]!.text!;
    expect(text).toContain("restart a production deployment");
    expect(text).toContain("kubectl rollout restart deploy/web");
    expect(text).toContain("once, session, always, deny");
    const run = fake.runs[0]!;
    const approval = asked.status.message!.metadata!["hermes/approval"] as Record<string, unknown>;
    expect(approval).toMatchObject({
      run_id: run.id,
      command: DEPLOY.command,
      description: DEPLOY.description,
      choices: ["once", "session", "always", "deny"],
    });
    expect(approval).not.toHaveProperty("event");
    if (generation === "newer") expect(approval.request_id).toEqual(expect.any(String));
    expect(fake.status(run.id)?.status).toBe("waiting_for_approval");
    expect(run.clientsLeft).toBe(0); // the events connection is still open while the person decides

    const done = await node.answer(asked.id, "once");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Restarted.");
    const answered = await fake.approvalAnswered(run.id);
    expect(answered.choice).toBe("once");
    if (generation === "newer") expect(answered.requestId).toBe(approval.request_id);
    expect(fake.runs).toHaveLength(1);
    expect(run.streamsOpened).toBe(1); // one events connection for the run's whole life
    expect(done.history?.map((m) => m.role)).toEqual(["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]);
  });

  it.each([
    ["yes", "once"],
    ["Y", "once"],
    ["ok", "once"],
    ["approve", "once"],
    ["allow", "once"],
    ["session", "session"],
    ["always", "always"],
    ["no", "deny"],
    ["n", "deny"],
    ["reject", "deny"],
    [" Deny. ", "deny"],
  ])("the answer %j is sent as %s", async (answer, choice) => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.approval(DEPLOY, { deny: [hermes.delta("Declined."), hermes.completed()] }),
        hermes.delta("Done."),
        hermes.completed(),
      ],
    });
    const asked = await node.send("restart web");
    const done = await node.answer(asked.id, answer);
    expect((await fake.approvalAnswered()).choice).toBe(choice);
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe(choice === "deny" ? "Declined." : "Done.");
  });

  it("refuses an answer that is not a choice with -32602 listing the choices offered; the task keeps waiting, and a good answer then works", async () => {
    const { fake, node } = await setup({
      generation,
      script: [hermes.approval(DEPLOY), hermes.delta("Done."), hermes.completed()],
    });
    const asked = await node.send("restart web");
    const err = await refused(node.answer(asked.id, "maybe later"));
    expect(err.code).toBe(-32602);
    expect(err.message).toBe(
      '"maybe later" is not an answer to this Hermes approval; answer one of: once, session, always, deny (yes means once, no means deny)',
    );
    expect((await node.get(asked.id)).status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(fake.requests.filter((r) => r.path.endsWith("/approval"))).toHaveLength(0);
    const done = await node.answer(asked.id, "yes");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("two approvals in one run: each one asks, each answer goes to the same run", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.approval(DEPLOY),
        hermes.delta("Restarted. "),
        hermes.approval({ command: "rm -rf /tmp/cache", description: "delete the cache" }),
        hermes.delta("Cleaned."),
        hermes.completed(),
      ],
    });
    const first = await node.send("restart and clean");
    expect(first.status.message!.parts[0]!.text).toContain("kubectl rollout restart");
    const second = await node.answer(first.id, "yes");
    expect(second.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(second.status.message!.parts[0]!.text).toContain("rm -rf /tmp/cache");
    const done = await node.answer(first.id, "session");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Cleaned.");
    expect(fake.runs[0]!.answers.map((a) => a.choice)).toEqual(["once", "session"]);
    expect(fake.runs).toHaveLength(1);
    expect(fake.runs[0]!.streamsOpened).toBe(1);
  });

  it("offers only the choices the run offers: a smart-denied command takes once or deny, not session", async () => {
    const { node } = await setup({
      generation,
      script: [hermes.approval({ ...DEPLOY, smartDenied: true }), hermes.completed("ok")],
    });
    const asked = await node.send("restart web");
    expect((asked.status.message!.metadata!["hermes/approval"] as { choices: string[] }).choices).toEqual([
      "once",
      "deny",
    ]);
    const err = await refused(node.answer(asked.id, "session"));
    expect(err.message).toContain("answer one of: once, deny");
    expect((await node.answer(asked.id, "yes")).status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("cancel during an approval stops the run on Hermes and ends the task CANCELED once the run is cancelled there", async () => {
    const { fake, node } = await setup({ generation, script: [hermes.approval(DEPLOY), hermes.completed("never")] });
    const asked = await node.send("restart web");
    const runId = asked.metadata?.["hermes/runId"];
    const canceled = await node.handler.cancelTask({ id: asked.id }, who("alpha"));
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect(canceled.status.message?.parts[0]?.text).toBe(`canceled by alpha; Hermes stopped run ${runId}`);
    const run = await fake.stopRequested();
    expect(run.id).toBe(runId);
    expect(run.outcome).toBe("cancelled"); // already, when the cancel was recorded
  });

  it("a cancel whose run is still stopping when the wait ends says so", async () => {
    const fake = startFakeHermes({
      apiKey: KEY,
      generation,
      holdStops: true,
      script: [hermes.approval(DEPLOY), hermes.completed("never")],
    });
    fakes.push(fake);
    const quick = await startHermesNode(fake, { apiKey: KEY, timing: { stopWaitMs: 200 } });
    nodes.push(quick);
    const asked = await quick.send("restart web");
    const runId = asked.metadata?.["hermes/runId"] as string;
    const canceled = await quick.handler.cancelTask({ id: asked.id }, who("alpha"));
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect(canceled.status.message?.parts[0]?.text).toBe(
      `canceled by alpha; Hermes is still stopping run ${runId} (its status was stopping after 0.2 s; it stops once the model call in flight returns)`,
    );
    expect(fake.status(runId)?.status).toBe("stopping");
    fake.finishStop(runId);
    expect((await fake.stopped(runId)).outcome).toBe("cancelled");
  });

  it("an approval Hermes denies on its timeout takes the question back; a late answer hears why, and the task ends as the run did", async () => {
    const { fake, node } = await setup({
      generation,
      script: [
        hermes.approval(DEPLOY, {
          timeout: [
            ...hermes.tool("terminal", "echo skipped"),
            hermes.delta("Skipped the restart."),
            hermes.gate("end"),
          ],
        }),
        hermes.completed(),
      ],
    });
    const asked = await node.send("restart web");
    expect(fake.expireApproval()).toBe(true);
    await node.reach(asked.id, (t) => t.status.state === "TASK_STATE_WORKING");
    const late = await refused(node.answer(asked.id, "yes"));
    expect(late.code).toBe(-32004);
    expect(late.message).toContain(
      "no longer waits for input (Hermes went on without this answer: it denies an approval nobody answers in time)",
    );
    fake.release("end");
    const done = await node.reach(asked.id, (t) => t.status.state === "TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("Skipped the restart.");
    // The task's log: the question, taken back when the run went on, then the run's own progress.
    const log: string[] = [];
    for await (const item of await node.handler.subscribeToTask({ id: asked.id }, who("alpha"), 0)) {
      const u = (item.response as any).statusUpdate;
      if (u) log.push(`${u.status.state}: ${u.status.message?.parts[0]?.text ?? ""}`);
    }
    expect(log.slice(1, 4)).toEqual([
      expect.stringMatching(/^TASK_STATE_INPUT_REQUIRED: Hermes asks for approval/),
      "TASK_STATE_WORKING: no longer waiting for an answer: Hermes went on without this answer: it denies an approval nobody answers in time",
      "TASK_STATE_WORKING: running terminal: echo skipped",
    ]);
    expect(fake.runs[0]!.answers).toHaveLength(0);
  });

  it("a run stopped from elsewhere (run.cancelled that this node did not ask for) ends the task FAILED, saying Hermes stopped it", async () => {
    const { fake, node } = await setup({
      generation,
      script: [hermes.delta("Working on it. "), hermes.gate("wait"), hermes.completed()],
    });
    const stream = node.stream({ message: userMessage("long job") });
    const run = await fake.gateReached("wait");
    const res = await fetch(`${fake.url}/v1/runs/${run.id}/stop`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.ok).toBe(true);
    const items = await stream;
    const last = (items.at(-1)!.response as any).statusUpdate;
    expect(last.status.state).toBe("TASK_STATE_FAILED");
    expect(last.status.message.parts[0].text).toBe(
      `Hermes at ${fake.url} stopped run ${run.id} without this node asking (Hermes shut down or restarted, or the run was stopped on Hermes itself); send the task again`,
    );
  });

  it("run.failed ends the task FAILED with Hermes's error", async () => {
    const { node } = await setup({
      generation,
      script: [hermes.delta("Trying. "), hermes.failed("the model provider refused the request")],
    });
    const task = await node.send("do it");
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(task.status.message?.parts[0]?.text).toBe("the Hermes run failed: the model provider refused the request");
  });

  it("tolerates events it does not know", async () => {
    const { node } = await setup({
      generation,
      script: [
        hermes.event("run.steered", { accepted: true }),
        hermes.event("something.new", { x: 1 }),
        hermes.delta("fine"),
        hermes.completed(),
      ],
    });
    const task = await node.send("go");
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(task)).toBe("fine");
  });
});

describe("HermesExecutor errors and readiness", () => {
  it("a refused API key puts the task in AUTH_REQUIRED naming the endpoint, the HTTP status and the fix (see test/tasks/auth-required.test.ts)", async () => {
    const fake = startFakeHermes({ apiKey: KEY });
    fakes.push(fake);
    const node = await startHermesNode(fake, { apiKey: "wrong-key" });
    nodes.push(node);
    const task = await node.send("go");
    expect(task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    expect(task.status.message?.parts[0]?.text).toBe(
      `Hermes at ${fake.url} refused this node's API key (HTTP 401 invalid_api_key). The node's operator must set the key Hermes expects ` +
        "(API_SERVER_KEY there; here the hermes_api_key_file, then SIGHUP, or HERMES_API_KEY and a restart); then send any message to this task to run it again, or cancel it.",
    );
    expect(fake.runs).toHaveLength(0);
  });

  it("an unreachable Hermes ends the task FAILED saying so, after a few tries", async () => {
    const fake = startFakeHermes({ apiKey: KEY });
    fakes.push(fake);
    await fake.down();
    const node = await startHermesNode(fake, { apiKey: KEY });
    nodes.push(node);
    const task = await node.send("go");
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(task.status.message?.parts[0]?.text).toMatch(new RegExp(`^Hermes at ${fake.url} is unreachable: `));
  });

  it("a file part is refused before any task exists (-32005)", async () => {
    const fake = startFakeHermes({ apiKey: KEY });
    fakes.push(fake);
    const node = await startHermesNode(fake, { apiKey: KEY });
    nodes.push(node);
    const err = await refused(
      node.handler.sendMessage(
        { message: { messageId: "m", role: "ROLE_USER", parts: [{ url: "https://x/y.pdf" }] } },
        who("alpha"),
      ),
    );
    expect(err.code).toBe(-32005);
    expect(fake.requests).toHaveLength(0);
  });

  it("ready() checks that the key is accepted, not only that /health answers", async () => {
    const fake = startFakeHermes({ apiKey: KEY });
    fakes.push(fake);
    const signal = new AbortController().signal;
    expect(await new HermesExecutor({ baseUrl: fake.url, apiKey: KEY }).ready(signal)).toEqual({
      ready: true,
      detail: `Hermes at ${fake.url} accepted the API key`,
    });
    const wrong = await new HermesExecutor({ baseUrl: fake.url, apiKey: "nope" }).ready(signal);
    expect(wrong.ready).toBe(false);
    expect(wrong.detail).toContain("refused the API key (HTTP 401)");
    await fake.down();
    const down = await new HermesExecutor({ baseUrl: fake.url, apiKey: KEY }).ready(signal);
    expect(down.ready).toBe(false);
    expect(down.detail).toContain("is unreachable");
  });
});
