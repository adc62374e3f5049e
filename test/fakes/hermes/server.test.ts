/**
 * The fake Hermes server pinned to the real one (the source named in server.ts),
 * with raw fetch: the frame format, the event names and fields, one queue consumed once (no replay, 404 once
 * the reader left while the run goes on, split between two readers), keep-alive and stream-closed comments,
 * status objects. Approvals, stop, limits, idempotency, restarts and auth: control.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { call, openEvents } from "./client";
import { hermes, startFakeHermes, type FakeHermes, type FakeHermesOptions, type Generation } from "./server";

const KEY = "hermes-test-key";
const fakes: FakeHermes[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.stop();
});
function start(options: FakeHermesOptions = {}): FakeHermes {
  const f = startFakeHermes({ apiKey: KEY, eventsGraceMs: 20, ...options });
  fakes.push(f);
  return f;
}
async function startRun(f: FakeHermes, body: Record<string, unknown> = { input: "hello" }): Promise<string> {
  const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body });
  expect(r.status, r.text).toBe(202);
  return r.json.run_id;
}

describe.each(["older", "newer"] as Generation[])("the %s server's event stream", (generation) => {
  it("answers POST /v1/runs 202 with a run_<32 hex> id (newer adds replayed: false)", async () => {
    const f = start({ generation });
    const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "hi" } });
    expect(r.status).toBe(202);
    expect(r.json.run_id).toMatch(/^run_[0-9a-f]{32}$/);
    expect(r.json).toEqual(
      generation === "newer"
        ? { run_id: r.json.run_id, status: "started", replayed: false }
        : { run_id: r.json.run_id, status: "started" },
    );
    expect(r.text).toBe(
      `{"run_id": "${r.json.run_id}", "status": "started"${generation === "newer" ? ', "replayed": false' : ""}}`,
    );
    expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  it("writes data-only frames with the event name in the JSON, the real fields (reasoning.available = the message's text, \"\\n\\n\" after a tool call), then ': stream closed' and EOF", async () => {
    const f = start({
      generation,
      script: [
        hermes.delta("Héllo "),
        hermes.toolStarted("terminal", "df -h"),
        hermes.toolCompleted("terminal", { duration: 1.23456, error: true }),
        hermes.reasoning("the disk is fine"),
        hermes.delta("40% used"),
        hermes.completed(undefined, { input_tokens: 5, output_tokens: 2, total_tokens: 7 }),
      ],
    });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    expect(s.status).toBe(200);
    expect(s.headers.get("content-type")).toBe("text/event-stream");
    expect(s.headers.get("cache-control")).toBe("no-cache");
    const blocks = await s.rest();
    expect(blocks.map((b) => b.comment ?? b.data.event)).toEqual([
      "message.delta",
      "reasoning.available", // the narration, as the agent loop sends each assistant message's text
      "tool.started",
      "tool.completed",
      "reasoning.available", // the script's own
      "message.delta",
      "reasoning.available", // the answer's text
      "run.completed",
      ": stream closed",
    ]);
    // Python json.dumps: ", " and ": " separators, non-ASCII escaped, a float timestamp; no event:/id: lines.
    expect(blocks[0]!.raw).toMatch(
      /^data: \{"event": "message\.delta", "run_id": "run_[0-9a-f]{32}", "timestamp": \d+\.\d+, "delta": "H\\u00e9llo "\}\n\n$/,
    );
    const [d1, narration, ts, tc, re, d2, said, done] = blocks.map((b) => b.data);
    expect(narration).toEqual({
      event: "reasoning.available",
      run_id: id,
      timestamp: narration.timestamp,
      text: "Héllo",
    });
    expect(d2.delta).toBe("\n\n40% used"); // a paragraph break after the tool iteration
    expect(said).toEqual({ event: "reasoning.available", run_id: id, timestamp: said.timestamp, text: "40% used" });
    expect(Object.keys(d1)).toEqual(["event", "run_id", "timestamp", "delta"]);
    expect(d1.run_id).toBe(id);
    expect(ts).toMatchObject({ event: "tool.started", tool: "terminal", preview: "df -h" });
    expect(Object.keys(ts)).toEqual(["event", "run_id", "timestamp", "tool", "preview"]);
    expect(tc).toMatchObject({ event: "tool.completed", tool: "terminal", duration: 1.235, error: true });
    expect(Object.keys(tc)).toEqual(["event", "run_id", "timestamp", "tool", "duration", "error"]);
    expect(re).toMatchObject({ event: "reasoning.available", text: "the disk is fine" });
    // The final answer alone: the narration before the tool call is not in output.
    expect(done).toEqual({
      event: "run.completed",
      run_id: id,
      timestamp: done.timestamp,
      output: "40% used",
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
    });
    expect(blocks[8]!.raw).toBe(": stream closed\n\n");
    expect(await s.next()).toBeUndefined();
  });

  it("sends run.failed {error} and ends the stream", async () => {
    const f = start({
      generation,
      script: [hermes.delta("Trying... "), hermes.failed("tool 'terminal' is not allowed")],
    });
    const id = await startRun(f);
    const blocks = await (await openEvents(f.url, id, KEY)).rest();
    expect(blocks.at(-2)!.data).toEqual({
      event: "run.failed",
      run_id: id,
      timestamp: blocks.at(-2)!.data.timestamp,
      error: "tool 'terminal' is not allowed",
    });
    expect(blocks.at(-1)!.comment).toBe(": stream closed");
  });

  it("buffers events from the run's creation, gives them to the first reader only, then answers 404", async () => {
    const f = start({ generation, script: [hermes.delta("a"), hermes.delta("b"), hermes.completed()] });
    const id = await startRun(f);
    await f.finished(id); // the run went on with nobody reading
    const first = await (await openEvents(f.url, id, KEY)).rest();
    expect(first.map((b) => b.data?.delta ?? b.data?.event ?? b.comment)).toEqual([
      "a",
      "b",
      "reasoning.available",
      "run.completed",
      ": stream closed",
    ]);
    const again = await openEvents(f.url, id, KEY);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({
      error: { message: `Run not found: ${id}`, type: "invalid_request_error", param: null, code: "run_not_found" },
    });
  });

  it("drops the queue once the reader left: the next event dies with the dead reader, later GET /events is 404, the run goes on", async () => {
    const f = start({
      generation,
      script: [
        hermes.delta("a"),
        hermes.gate("g1"),
        hermes.delta("b"),
        hermes.gate("g2"),
        hermes.delta("c"),
        hermes.completed(),
      ],
    });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    expect((await s.nextData()).delta).toBe("a");
    s.close();
    await f.clientLeft(id);
    f.release("g1"); // aiohttp notices the departure only when it writes "b"
    const run = await f.queueDropped(id);
    expect(run.lost.map((e) => e.delta)).toEqual(["b"]);
    const late = await openEvents(f.url, id, KEY);
    expect(late.status).toBe(404);
    expect(late.body.error.code).toBe("run_not_found");
    f.release("g2");
    await f.finished(id);
    const st = await call(f.url, "GET", `/v1/runs/${id}`, { key: KEY });
    expect(st.json).toMatchObject({ status: "completed", output: "abc", last_event: "run.completed" });
    expect(run.read.map((e) => e.delta ?? e.event)).toEqual(["a"]);
  });

  it("splits the events between two readers of one run (nothing is copied to both)", async () => {
    const f = start({
      generation,
      script: [
        hermes.gate("go"),
        hermes.delta("1"),
        hermes.delta("2"),
        hermes.delta("3"),
        hermes.delta("4"),
        hermes.completed(),
      ],
    });
    const id = await startRun(f);
    const a = await openEvents(f.url, id, KEY);
    await f.readersWaiting(id, 1);
    const b = await openEvents(f.url, id, KEY);
    await f.readersWaiting(id, 2);
    f.release("go");
    await f.eventsRead(id, 6);
    await f.queueDropped(id); // one reader got the end sentinel, the other waits on
    const got: Record<string, string[]> = { a: [], b: [] };
    let total = 0;
    let allIn!: () => void;
    const done = new Promise<void>((r) => (allIn = r));
    const collect = async (name: "a" | "b", s: typeof a) => {
      try {
        for (let d = await s.nextData(); d; d = await s.nextData()) {
          got[name]!.push(d.delta ?? d.event);
          if (++total === 6) allIn();
        }
      } catch {
        // closed by the test below
      }
    };
    const readers = [collect("a", a), collect("b", b)];
    await done;
    a.close();
    b.close();
    await Promise.all(readers);
    expect([...got.a!, ...got.b!].sort()).toEqual(["1", "2", "3", "4", "reasoning.available", "run.completed"]);
    expect(got.a!.length).toBeGreaterThan(0);
    expect(got.b!.length).toBeGreaterThan(0);
  });

  it("writes ': keepalive' after the keep-alive interval of silence, and the stream goes on", async () => {
    const f = start({ generation, keepaliveMs: 20, script: [hermes.gate("g"), hermes.completed("done")] });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    const k = await s.next();
    expect(k).toEqual({ raw: ": keepalive\n\n", comment: ": keepalive" });
    f.release("g");
    expect((await s.nextData()).event).toBe("reasoning.available");
    expect((await s.nextData()).event).toBe("run.completed");
    s.close();
  });

  it("shows the run as a status object: session_id, model, last_event; output and usage when completed", async () => {
    const f = start({
      generation,
      script: [...hermes.tool("terminal", "ls"), hermes.gate("g"), hermes.delta("done"), hermes.completed()],
    });
    const id = await startRun(f, { input: "hi", session_id: "conv-1", model: "hermes-3" });
    await f.gateReached("g");
    const running = (await call(f.url, "GET", `/v1/runs/${id}`, { key: KEY })).json;
    expect(Object.keys(running)).toEqual([
      "object",
      "run_id",
      "status",
      "updated_at",
      "created_at",
      "session_id",
      "model",
      "last_event",
    ]);
    expect(running).toMatchObject({
      object: "hermes.run",
      run_id: id,
      status: "running",
      session_id: "conv-1",
      model: "hermes-3",
      last_event: "tool.completed",
    });
    f.release("g");
    await f.finished(id);
    const done = (await call(f.url, "GET", `/v1/runs/${id}`, { key: KEY })).json;
    expect(done).toMatchObject({ status: "completed", output: "done", last_event: "run.completed" });
    expect(Object.keys(done.usage)).toEqual(["input_tokens", "output_tokens", "total_tokens"]);
    expect(done.updated_at).toBeGreaterThanOrEqual(done.created_at);
  });

  it("defaults session_id to the run id and model to hermes-agent; a failed run shows its error", async () => {
    const f = start({ generation, script: [hermes.failed("model refused")] });
    const id = await startRun(f);
    const run = await f.finished(id);
    expect(run.outcome).toBe("failed");
    const st = (await call(f.url, "GET", `/v1/runs/${id}`, { key: KEY })).json;
    expect(st).toMatchObject({
      status: "failed",
      session_id: id,
      model: "hermes-agent",
      error: "model refused",
      last_event: "run.failed",
    });
    const missing = await call(f.url, "GET", "/v1/runs/run_nope", { key: KEY });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toEqual({
      message: "Run not found: run_nope",
      type: "invalid_request_error",
      param: null,
      code: "run_not_found",
    });
  });

  it("records what each run was asked: input list, history, instructions, session_id, model, headers", async () => {
    const f = start({ generation });
    const input = [
      { role: "user", content: "first question" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "first" },
          { type: "text", text: "answer" },
        ],
      },
      { role: "user", content: "second question" },
    ];
    await startRun(f, { input, instructions: "Be brief.", session_id: "conv-2", model: "m1" });
    const run = await f.runCreated();
    expect(run.request).toMatchObject({
      input,
      userMessage: "second question",
      instructions: "Be brief.",
      sessionId: "conv-2",
      model: "m1",
    });
    expect(run.request.history).toEqual([
      { role: "user", content: "first question" },
      { role: "assistant", content: "first answer" },
    ]);
    expect(run.request.headers.authorization).toBe(`Bearer ${KEY}`);
    const explicit = [{ role: "user", content: "earlier" }];
    await startRun(f, { input: "now", conversation_history: explicit });
    expect((await f.runCreated(2)).request.history).toEqual(explicit);
    const post = await f.requestReceived((q) => q.method === "POST" && q.path === "/v1/runs", 2);
    expect(post.body).toEqual({ input: "now", conversation_history: explicit });
    expect(post.bearer).toBe(KEY);
    expect(post.status).toBe(202);
  });
});

describe("differences between the generations' streams", () => {
  it("newer forwards subagent events; older drops them", async () => {
    for (const generation of ["older", "newer"] as Generation[]) {
      const f = start({
        generation,
        script: [hermes.subagentStart({ goal: "look", subagent_id: "s1" }), hermes.completed("ok")],
      });
      const id = await startRun(f);
      const events = (await (await openEvents(f.url, id, KEY)).rest()).filter((b) => b.data).map((b) => b.data.event);
      expect(events).toEqual(
        generation === "newer"
          ? ["subagent.start", "reasoning.available", "run.completed"]
          : ["reasoning.available", "run.completed"],
      );
    }
  });

  it("a reader that reconnects before the server noticed the first one left loses the rest (both; servers older than 0.18.2 still gave deltas and the end)", async () => {
    for (const generation of ["older", "newer"] as Generation[]) {
      const f = start({
        generation,
        keepaliveMs: 60_000,
        script: [hermes.delta("a"), hermes.gate("g"), hermes.delta("b"), hermes.delta("c"), hermes.completed()],
      });
      const id = await startRun(f);
      const first = await openEvents(f.url, id, KEY);
      expect((await first.nextData()).delta).toBe("a");
      first.close();
      await f.clientLeft(id);
      const second = await openEvents(f.url, id, KEY); // the queue is still registered
      expect(second.status).toBe(200);
      await f.readersWaiting(id, 2);
      f.release("g");
      const run = await f.finished(id);
      expect(run.lost.map((e) => e.delta)).toEqual(["b"]); // taken by the dead reader
      expect(run.dropped.map((e) => e.delta ?? e.event)).toEqual(["c", "reasoning.available", "run.completed"]);
      expect(run.read.map((e) => e.delta)).toEqual(["a"]);
      second.close();
    }
  });
});

describe.each(["older", "newer"] as Generation[])("capabilities and sessions on the %s server", (generation) => {
  it("GET /v1/capabilities needs the key and lists the runs features; only newer says runs_idempotency", async () => {
    const f = start({ generation });
    expect((await call(f.url, "GET", "/v1/capabilities")).status).toBe(401);
    const caps = (await call(f.url, "GET", "/v1/capabilities", { key: KEY })).json;
    expect(caps).toMatchObject({
      object: "hermes.api_server.capabilities",
      platform: "hermes-agent",
      auth: { type: "bearer", required: true },
    });
    expect(caps.features).toMatchObject({
      run_submission: true,
      run_status: true,
      run_events_sse: true,
      run_stop: true,
      run_approval_response: true,
      session_resources: true,
    });
    if (generation === "newer")
      expect(caps.features.runs_idempotency).toEqual({ supported: true, durable: true, retention_seconds: 86400 });
    else expect(caps.features).not.toHaveProperty("runs_idempotency");
  });

  it("keeps each session's messages (user, tool calls, answer), served by GET /api/sessions/{id}/messages; an unknown session is 404", async () => {
    const f = start({
      generation,
      script: [
        hermes.delta("Looking. "),
        ...hermes.tool("terminal", "ls"),
        hermes.delta("Two files."),
        hermes.completed(),
      ],
    });
    const id = await startRun(f, { input: "what is here?", session_id: "conv-9" });
    await f.finished(id);
    expect((await call(f.url, "GET", "/api/sessions/conv-9/messages")).status).toBe(401);
    const r = await call(f.url, "GET", "/api/sessions/conv-9/messages", { key: KEY });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: "list", session_id: "conv-9" });
    expect(r.json.data.map((m: any) => [m.role, m.content, m.tool_calls ? "calls" : ""])).toEqual([
      ["user", "what is here?", ""],
      ["assistant", "Looking.", "calls"],
      ["tool", "done", ""],
      ["assistant", "Two files.", ""],
    ]);
    expect(Object.keys(r.json.data[0])).toEqual([
      "id",
      "session_id",
      "role",
      "content",
      "tool_call_id",
      "tool_calls",
      "tool_name",
      "timestamp",
      "token_count",
      "finish_reason",
      "reasoning",
      "reasoning_content",
    ]);
    const missing = await call(f.url, "GET", "/api/sessions/nope/messages", { key: KEY });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toEqual({
      message: "Session not found: nope",
      type: "invalid_request_error",
      param: null,
      code: "session_not_found",
    });
  });

  it("a run with a session_id and no history of its own: newer loads the session's messages, older takes session_id as a label", async () => {
    const f = start({ generation });
    await f.finished(await startRun(f, { input: "my name is Ada", session_id: "conv-3" }));
    await f.finished(await startRun(f, { input: "what is my name?", session_id: "conv-3" }));
    const second = await f.runCreated(2);
    if (generation === "newer") {
      expect(second.request.historyFrom).toBe("session");
      expect(second.request.history).toEqual([
        { role: "user", content: "my name is Ada" },
        { role: "assistant", content: "echo: my name is Ada" },
      ]);
    } else {
      expect(second.request.historyFrom).toBe("none");
      expect(second.request.history).toEqual([]);
    }
    // History given in the body wins on both, and is not written to the session again.
    const given = [{ role: "user", content: "earlier" }];
    await f.finished(await startRun(f, { input: "now", session_id: "conv-3", conversation_history: given }));
    expect((await f.runCreated(3)).request).toMatchObject({ historyFrom: "body", history: given });
    expect(f.sessions.messages("conv-3").map((m) => m.content)).toEqual([
      "my name is Ada",
      "echo: my name is Ada",
      "what is my name?",
      "echo: what is my name?",
      "now",
      "echo: now",
    ]);
  });
});
