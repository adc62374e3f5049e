/**
 * The fake Hermes server's control surface pinned to the real one, with raw fetch: approval.request fields,
 * choice aliases and the real 400/404/409s, the approval timeout's silent auto-deny, stop, the concurrency
 * limit, idempotency, drain, restart, the sweep, auth and bad input. Where the generations differ, each is
 * asserted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { call, openEvents } from "./client";
import { hermes, startFakeHermes, type FakeHermes, type FakeHermesOptions, type Generation } from "./server";

const KEY = "hermes-test-key";
const BOTH: Generation[] = ["older", "newer"];
const fakes: FakeHermes[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.stop();
});
function start(options: FakeHermesOptions = {}): FakeHermes {
  const f = startFakeHermes({ apiKey: KEY, eventsGraceMs: 20, ...options });
  fakes.push(f);
  return f;
}
async function startRun(
  f: FakeHermes,
  body: Record<string, unknown> = { input: "hello" },
  headers: Record<string, string> = {},
) {
  const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body, headers });
  expect(r.status, r.text).toBe(202);
  return r.json.run_id as string;
}
const post = (f: FakeHermes, path: string, body?: unknown) => call(f.url, "POST", path, { key: KEY, body });
const get = (f: FakeHermes, path: string) => call(f.url, "GET", path, { key: KEY });
const DEPLOY = { command: "kubectl rollout restart deploy/web", description: "restart a deployment" };

describe.each(BOTH)("approvals on the %s server", (generation) => {
  it("asks with approval.request (command, description, pattern keys, choices; no prompt/message) and waits", async () => {
    const f = start({ generation, script: [hermes.approval(DEPLOY), hermes.gate("after"), hermes.completed("done")] });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    const ask = await s.nextData();
    const envelope = {
      event: "approval.request",
      run_id: id,
      timestamp: ask.timestamp,
      choices: ["once", "session", "always", "deny"],
    };
    const base = {
      command: DEPLOY.command,
      pattern_key: DEPLOY.description,
      pattern_keys: [DEPLOY.description],
      description: DEPLOY.description,
    };
    if (generation === "newer") {
      expect(ask.approval_id).toMatch(/^[0-9a-f]{32}$/);
      expect(ask.request_id).toBe(ask.approval_id);
      expect(typeof ask.expires_at).toBe("number");
      expect(ask).toEqual({
        ...base,
        allow_permanent: true,
        allow_session: true,
        approval_id: ask.approval_id,
        request_id: ask.approval_id,
        expires_at: ask.expires_at,
        ...envelope,
      });
    } else expect(ask).toEqual({ ...base, allow_permanent: true, ...envelope }); // 0.18.2: no ids, no allow_session
    const st = (await get(f, `/v1/runs/${id}`)).json;
    expect(st).toMatchObject({ status: "waiting_for_approval", last_event: "approval.request" });
    if (generation === "newer") expect(st.approval).toEqual(ask);
    else expect(st).not.toHaveProperty("approval");
    await post(f, `/v1/runs/${id}/approval`, { choice: "once" });
    await f.gateReached("after", id);
    const after = (await get(f, `/v1/runs/${id}`)).json;
    expect(after).toMatchObject({ status: "running", last_event: "approval.responded" });
    expect(after).not.toHaveProperty("approval");
    s.close();
  });

  it("accepts the choice trimmed and lower-cased, approve/approved/allow as once; 200 answer and approval.responded on the stream", async () => {
    for (const [sent, meant] of [
      [" Approve ", "once"],
      ["APPROVED", "once"],
      ["allow", "once"],
      ["Session", "session"],
      ["always", "always"],
      ["deny", "deny"],
    ]) {
      const f = start({ generation, script: [hermes.approval(DEPLOY), hermes.completed("ok")] });
      const id = await startRun(f);
      const s = await openEvents(f.url, id, KEY);
      await s.nextData();
      const r = await post(f, `/v1/runs/${id}/approval`, { choice: sent });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toEqual({ object: "hermes.run.approval_response", run_id: id, choice: meant, resolved: 1 });
      const responded = await s.nextData();
      expect(responded).toEqual({
        event: "approval.responded",
        run_id: id,
        timestamp: responded.timestamp,
        choice: meant,
        resolved: 1,
      });
      expect((await f.approvalAnswered(id)).choice).toBe(meant);
      await s.rest();
      if (meant !== "once") continue;
      const st = (await get(f, `/v1/runs/${id}`)).json; // the status left waiting_for_approval (and its approval)
      expect(st).toMatchObject({ status: "completed", last_event: "run.completed" });
      expect(st).not.toHaveProperty("approval");
    }
  });

  it("rejects other choices with 400 invalid_approval_choice and ignores approval_id", async () => {
    const f = start({ generation, script: [hermes.approval(DEPLOY), hermes.completed()] });
    const id = await startRun(f);
    const ask = await f.approvalRequested(id);
    for (const choice of ["yes", "no", "", "once please"]) {
      const r = await post(f, `/v1/runs/${id}/approval`, { choice, approval_id: ask.approval_id });
      expect(r.status).toBe(400);
      const expected = generation === "newer" ? "always, deny, once, session" : "once, session, always, deny";
      expect(r.json).toEqual({
        error: {
          message: `Invalid approval choice; expected one of: ${expected}`,
          type: "invalid_request_error",
          param: null,
          code: "invalid_approval_choice",
        },
      });
    }
    expect((await post(f, `/v1/runs/${id}/approval`, { approval_id: ask.approval_id })).status).toBe(400); // no choice
    const bad = await call(f.url, "POST", `/v1/runs/${id}/approval`, { key: KEY, raw: "{nope" });
    expect(bad.json.error.message).toBe("Invalid JSON");
    expect((await get(f, `/v1/runs/${id}`)).json.status).toBe("waiting_for_approval");
  });

  it("answers 409 approval_not_pending with nothing pending, 409 approval_not_active once the run is over, 404 for an unknown run", async () => {
    const f = start({ generation, script: [hermes.gate("g"), hermes.completed()] });
    const id = await startRun(f);
    await f.gateReached("g");
    const notPending = await post(f, `/v1/runs/${id}/approval`, { choice: "once" });
    expect(notPending.status).toBe(409);
    expect(notPending.json.error).toEqual({
      message: `Run has no pending approval: ${id}`,
      type: "invalid_request_error",
      param: null,
      code: "approval_not_pending",
    });
    f.release("g");
    await f.finished(id);
    const notActive = await post(f, `/v1/runs/${id}/approval`, { choice: "once" });
    expect(notActive.status).toBe(409);
    expect(notActive.json.error).toMatchObject({
      message: `Run has no active approval session: ${id}`,
      code: "approval_not_active",
    });
    const unknown = await post(f, "/v1/runs/run_unknown/approval", { choice: "once" });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe("run_not_found");
  });

  it("runs the branch of the answer: deny fails the run, once goes on", async () => {
    const script = [
      hermes.approval(DEPLOY, { deny: [hermes.failed("the operator declined")] }),
      hermes.delta("Deployed."),
      hermes.completed(),
    ];
    const f = start({ generation, script });
    const denied = await startRun(f);
    await f.approvalRequested(denied);
    await post(f, `/v1/runs/${denied}/approval`, { choice: "deny" });
    expect((await f.finished(denied)).outcome).toBe("failed");
    expect((await get(f, `/v1/runs/${denied}`)).json).toMatchObject({
      status: "failed",
      error: "the operator declined",
    });
    const approved = await startRun(f);
    await f.approvalRequested(approved);
    await post(f, `/v1/runs/${approved}/approval`, { choice: "once" });
    await f.finished(approved);
    expect((await get(f, `/v1/runs/${approved}`)).json).toMatchObject({ status: "completed", output: "Deployed." });
  });

  it("auto-denies on the approval timeout without any event or status change; a late answer gets 409", async () => {
    const f = start({
      generation,
      script: [
        hermes.approval(DEPLOY, { timeout: [hermes.delta("Timed out, not deploying.")] }),
        hermes.gate("after"),
        hermes.completed(),
      ],
    });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    const ask = await s.nextData();
    expect(f.expireApproval(id)).toBe(true);
    expect(await f.approvalExpired(id)).toEqual(ask);
    await f.gateReached("after", id);
    const st = (await get(f, `/v1/runs/${id}`)).json;
    expect(st.status).toBe("waiting_for_approval"); // nothing changed the status: the agent just got "BLOCKED"
    if (generation === "newer") expect(st.approval).toEqual(ask);
    const late = await post(f, `/v1/runs/${id}/approval`, { choice: "once" });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe("approval_not_pending");
    expect((await s.nextData()).delta).toBe("\n\nTimed out, not deploying."); // no approval.* event in between
    f.release("after");
    expect((await s.nextData()).event).toBe("reasoning.available");
    expect((await s.nextData()).event).toBe("run.completed");
    expect((await post(f, `/v1/runs/${id}/approval`, { choice: "once" })).json.error.code).toBe("approval_not_active");
    s.close();
  });

  it("expires a pending approval after approvalTimeoutMs by itself", async () => {
    const f = start({
      generation,
      approvalTimeoutMs: 30,
      script: [hermes.approval(DEPLOY), hermes.completed("went on")],
    });
    const id = await startRun(f);
    await f.approvalExpired(id);
    expect((await f.finished(id)).outcome).toBe("completed");
  });
});

describe("approval differences between the generations", () => {
  it("both narrow choices for smart-denied and non-permanent prompts; only newer has allow_session", async () => {
    for (const generation of BOTH) {
      const f = start({
        generation,
        script: [
          hermes.approvals([
            { ...DEPLOY, smartDenied: true },
            { ...DEPLOY, command: "rm -rf /srv", allowPermanent: false },
          ]),
          hermes.completed(),
        ],
      });
      const id = await startRun(f);
      const [a, b] = [await f.approvalRequested(id, 1), await f.approvalRequested(id, 2)];
      if (generation === "newer") {
        expect(a).toMatchObject({
          choices: ["once", "deny"],
          smart_denied: true,
          allow_permanent: false,
          allow_session: false,
        });
        expect(b).toMatchObject({ choices: ["once", "session", "deny"], allow_permanent: false, allow_session: true });
      } else {
        // 0.18.2 `_approval_event_choices(smart_denied, allow_permanent)`.
        expect(a).toMatchObject({ choices: ["once", "deny"], smart_denied: true, allow_permanent: false });
        expect(b).toMatchObject({ choices: ["once", "session", "deny"], allow_permanent: false });
        expect(a).not.toHaveProperty("allow_session");
      }
    }
  });

  it("newer answers one approval by request_id (echoed), rejects a bad one, and coerces all: 'false' to false", async () => {
    const f = start({
      script: [
        hermes.approvals([DEPLOY, { ...DEPLOY, command: "rm -rf /srv" }, { ...DEPLOY, command: "reboot" }]),
        hermes.completed(),
      ],
    });
    const id = await startRun(f);
    const second = await f.approvalRequested(id, 2);
    await f.approvalRequested(id, 3);
    const r = await post(f, `/v1/runs/${id}/approval`, { choice: "deny", request_id: ` ${second.request_id} ` });
    expect(r.json).toEqual({
      object: "hermes.run.approval_response",
      run_id: id,
      choice: "deny",
      request_id: second.request_id,
      resolved: 1,
    });
    expect(
      (await post(f, `/v1/runs/${id}/approval`, { choice: "once", request_id: second.request_id })).json.error.code,
    ).toBe("approval_not_pending");
    const invalid = await post(f, `/v1/runs/${id}/approval`, { choice: "once", request_id: "  " });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error).toMatchObject({
      message: "Approval request_id is invalid.",
      code: "invalid_approval_request",
    });
    const notAll = await post(f, `/v1/runs/${id}/approval`, { choice: "once", all: "false" });
    expect(notAll.json.resolved).toBe(1);
    const rest = await post(f, `/v1/runs/${id}/approval`, { choice: "once", resolve_all: "true" });
    expect(rest.json.resolved).toBe(1);
    expect((await f.finished(id)).outcome).toBe("completed");
  });

  it("older ignores request_id and coerces all: 'false' to false, 'true' to true (0.18.2 `_coerce_request_bool`)", async () => {
    const f = start({
      generation: "older",
      script: [
        hermes.approvals([DEPLOY, { ...DEPLOY, command: "reboot" }, { ...DEPLOY, command: "halt" }]),
        hermes.completed(),
      ],
    });
    const id = await startRun(f);
    await f.approvalRequested(id, 3);
    const one = await post(f, `/v1/runs/${id}/approval`, { choice: "once", all: "false", request_id: "whatever" });
    expect(one.json).toEqual({ object: "hermes.run.approval_response", run_id: id, choice: "once", resolved: 1 });
    const rest = await post(f, `/v1/runs/${id}/approval`, { choice: "once", all: "true" });
    expect(rest.json.resolved).toBe(2);
    await f.finished(id);
  });
});

describe.each(BOTH)("stop on the %s server", (generation) => {
  it("200 stopping, then a bare run.cancelled on the stream and status cancelled; a second stop: newer answers the status, older 404", async () => {
    const f = start({ generation, script: [hermes.delta("working "), hermes.stall()] });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    expect((await s.nextData()).delta).toBe("working ");
    await f.gateReached("stall");
    const r = await post(f, `/v1/runs/${id}/stop`);
    expect(r.json).toEqual({ run_id: id, status: "stopping" });
    const rest = await s.rest();
    expect((await f.stopped(id)).stopRequests).toBe(1);
    expect(rest.map((b) => b.data?.event ?? b.comment)).toEqual(["run.cancelled", ": stream closed"]);
    expect(Object.keys(rest[0]!.data)).toEqual(["event", "run_id", "timestamp"]);
    expect((await get(f, `/v1/runs/${id}`)).json).toMatchObject({ status: "cancelled", last_event: "run.cancelled" });
    const again = await post(f, `/v1/runs/${id}/stop`);
    if (generation === "newer") {
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({
        object: "hermes.run",
        run_id: id,
        status: "cancelled",
        last_event: "run.cancelled",
      });
    } else {
      // No agent and no task left.
      expect(again.status).toBe(404);
      expect(again.json.error).toMatchObject({ message: `Run not found: ${id}`, code: "run_not_found" });
    }
    expect((await post(f, "/v1/runs/run_unknown/stop")).status).toBe(404);
  });

  it("an agent slow to stop: the status shows stopping until it exits (0.18.2: about 2 s, the model call in flight)", async () => {
    const f = start({ generation, holdStops: true, script: [hermes.approval(DEPLOY), hermes.completed()] });
    const id = await startRun(f);
    await f.approvalRequested(id);
    await post(f, `/v1/runs/${id}/stop`);
    await f.stopRequested(id);
    expect((await get(f, `/v1/runs/${id}`)).json).toMatchObject({ status: "stopping", last_event: "run.stopping" });
    expect((await post(f, `/v1/runs/${id}/approval`, { choice: "once" })).json.error.code).toBe("approval_not_pending");
    f.finishStop(id);
    expect((await f.finished(id)).outcome).toBe("cancelled");
  });

  it("a stop cuts a slow model call short", async () => {
    const f = start({ generation, script: [hermes.sleep(60_000), hermes.completed("never")] });
    const id = await startRun(f);
    await f.requestReceived((q) => q.path === `/v1/runs`);
    await post(f, `/v1/runs/${id}/stop`);
    expect((await f.finished(id)).outcome).toBe("cancelled");
    expect((await post(f, `/v1/runs/${id}/approval`, { choice: "once" })).json.error.code).toBe("approval_not_active");
  });
});

describe.each(BOTH)("a graceful shutdown of the %s server", (generation) => {
  it("cancels every run in flight: a bare run.cancelled (as a stop gives) and ': stream closed', then the port closes and the runs are forgotten", async () => {
    const f = start({ generation, script: [hermes.delta("working "), hermes.stall()] });
    const id = await startRun(f);
    const s = await openEvents(f.url, id, KEY);
    expect((await s.nextData()).delta).toBe("working ");
    await f.gateReached("stall");
    await f.shutdown();
    const rest = await s.rest();
    expect(rest.map((b) => b.data?.event ?? b.comment)).toEqual(["run.cancelled", ": stream closed"]);
    expect(Object.keys(rest[0]!.data)).toEqual(["event", "run_id", "timestamp"]); // no reason
    expect(f.runs[0]!.outcome).toBe("cancelled");
    expect(f.runs[0]!.stopRequests).toBe(0);
    await expect(fetch(`${f.url}/health`)).rejects.toThrow();
    await f.up();
    expect((await get(f, `/v1/runs/${id}`)).status).toBe(404); // (a newer server keeps only idempotent runs)
  });
});

describe("the concurrency limit", () => {
  it("answers 429 rate_limit_exceeded past the limit, with Retry-After: 1 (0.18.2 as newer)", async () => {
    for (const generation of BOTH) {
      const f = start({ generation, maxConcurrentRuns: 2, script: [hermes.stall()] });
      await startRun(f);
      await startRun(f);
      const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "third" } });
      expect(r.status).toBe(429);
      expect(r.json.error).toEqual({
        message: "Too many concurrent runs (max 2)",
        type: "rate_limit_error",
        param: null,
        code: "rate_limit_exceeded",
      });
      expect(r.headers.get("retry-after")).toBe("1");
      expect(f.runs).toHaveLength(2);
    }
  });

  it("counts the runs still working: a finished run nobody read does not count (0.18.2 as newer)", async () => {
    for (const generation of BOTH) {
      const f = start({ generation, maxConcurrentRuns: 1, script: [hermes.completed("quick")] });
      const id = await startRun(f);
      await f.finished(id);
      const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "next" } });
      expect(r.status).toBe(202);
    }
  });
});

describe("idempotency", () => {
  it("newer: the same key and body replay the run (202, replayed, Idempotency-Replayed); another body is 409; a bad key 400", async () => {
    const f = start({ script: [hermes.stall()] });
    const headers = { "idempotency-key": "task-42" };
    const first = await call(f.url, "POST", "/v1/runs", {
      key: KEY,
      body: { input: "deploy", session_id: "c1" },
      headers,
    });
    await f.gateReached("stall");
    const replay = await call(f.url, "POST", "/v1/runs", {
      key: KEY,
      body: { session_id: "c1", input: "deploy" },
      headers,
    });
    expect(replay.status).toBe(202);
    expect(replay.json).toEqual({ run_id: first.json.run_id, status: "running", replayed: true });
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(f.runs).toHaveLength(1);
    expect(f.runs[0]!.request.idempotencyKey).toBe("task-42");
    const conflict = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "something else" }, headers });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toMatchObject({
      message: "Idempotency-Key was already used with a different request payload",
      code: "idempotency_key_conflict",
    });
    for (const bad of ["a b", "x".repeat(256), "clé"]) {
      const r = await call(f.url, "POST", "/v1/runs", {
        key: KEY,
        body: { input: "deploy" },
        headers: { "idempotency-key": bad },
      });
      expect(r.status, bad).toBe(400);
      expect(r.json.error).toMatchObject({
        message: "Idempotency-Key must be 1-255 visible ASCII characters",
        code: "invalid_idempotency_key",
      });
    }
  });

  it("newer: a replay works at the concurrency limit; older ignores the key and starts a second run", async () => {
    const newer = start({ maxConcurrentRuns: 1, script: [hermes.stall()] });
    const headers = { "idempotency-key": "k1" };
    const a = await call(newer.url, "POST", "/v1/runs", { key: KEY, body: { input: "x" }, headers });
    const b = await call(newer.url, "POST", "/v1/runs", { key: KEY, body: { input: "x" }, headers });
    expect([a.status, b.status, b.json.run_id]).toEqual([202, 202, a.json.run_id]);
    const older = start({ generation: "older", script: [hermes.stall()] });
    const c = await call(older.url, "POST", "/v1/runs", { key: KEY, body: { input: "x" }, headers });
    const d = await call(older.url, "POST", "/v1/runs", { key: KEY, body: { input: "x" }, headers });
    expect(c.json.run_id).not.toBe(d.json.run_id);
    expect(d.json).not.toHaveProperty("replayed");
    expect(older.runs).toHaveLength(2);
  });
});

describe("restart", () => {
  it("newer: an idempotent run in flight becomes interrupted (status, replay, stop, approval), others are gone; open streams are cut", async () => {
    const f = start({ script: [hermes.approval(DEPLOY), hermes.completed()] });
    const kept = await startRun(f, { input: "kept" }, { "idempotency-key": "task-1" });
    const lost = await startRun(f, { input: "lost" });
    await f.approvalRequested(kept);
    const s = await openEvents(f.url, kept, KEY);
    await s.nextData();
    await f.restart();
    await expect(s.next()).rejects.toThrow();
    expect(f.run(kept)!.killedByRestart).toBe(true);
    expect(f.run(kept)!.outcome).toBeUndefined();
    const st = (await get(f, `/v1/runs/${kept}`)).json;
    expect(st).toMatchObject({
      status: "interrupted",
      error: "The gateway restarted before this run settled.",
      last_event: "run.interrupted",
      session_id: kept,
    });
    expect(st.approval.event).toBe("approval.request"); // stale, kept by status.update
    expect((await get(f, `/v1/runs/${lost}`)).status).toBe(404);
    const replay = await call(f.url, "POST", "/v1/runs", {
      key: KEY,
      body: { input: "kept" },
      headers: { "idempotency-key": "task-1" },
    });
    expect(replay.json).toEqual({ run_id: kept, status: "interrupted", replayed: true });
    expect((await post(f, `/v1/runs/${kept}/stop`)).json.status).toBe("interrupted");
    expect((await post(f, `/v1/runs/${kept}/approval`, { choice: "once" })).json.error.code).toBe(
      "approval_not_active",
    );
    expect((await openEvents(f.url, kept, KEY)).status).toBe(404);
    expect(f.runs).toHaveLength(2);
  });

  it("newer keeps a finished idempotent run's status across a restart", async () => {
    const f = start({ script: [hermes.completed("all done")] });
    const id = await startRun(f, { input: "x" }, { "idempotency-key": "done-1" });
    await f.finished(id);
    await f.restart();
    expect((await get(f, `/v1/runs/${id}`)).json).toMatchObject({ status: "completed", output: "all done" });
  });

  it("older: every run is gone (404 everywhere)", async () => {
    const f = start({ generation: "older", script: [hermes.stall()] });
    const id = await startRun(f, { input: "x" }, { "idempotency-key": "ignored" });
    await f.restart();
    for (const r of [
      await get(f, `/v1/runs/${id}`),
      await post(f, `/v1/runs/${id}/stop`),
      await post(f, `/v1/runs/${id}/approval`, { choice: "once" }),
    ])
      expect([r.status, r.json.error.code]).toEqual([404, "run_not_found"]);
    expect((await openEvents(f.url, id, KEY)).status).toBe(404);
  });

  it("while down, connections are refused", async () => {
    const f = start();
    await f.down();
    await expect(fetch(`${f.url}/health`)).rejects.toThrow();
    await f.up();
    expect((await call(f.url, "GET", "/health")).status).toBe(200);
  });
});

describe("drain and sweep", () => {
  it("draining: 503 gateway_draining with Retry-After: 1 for new runs, running ones go on (0.18.2 has the gate too)", async () => {
    for (const generation of BOTH) {
      const f = start({ generation, script: [hermes.gate("g"), hermes.completed("finished anyway")] });
      const id = await startRun(f);
      f.drain();
      const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "more" } });
      expect(r.status).toBe(503);
      expect(r.json.error).toMatchObject({
        message: "Gateway is draining existing work; retry shortly.",
        code: "gateway_draining",
      });
      expect(r.headers.get("retry-after")).toBe("1");
      f.release("g");
      expect((await f.finished(id)).outcome).toBe("completed");
    }
  });

  it("sweeps an unread queue (later GET /events 404) while the run goes on and can still be stopped", async () => {
    for (const generation of BOTH) {
      const f = start({ generation, script: [hermes.gate("g"), hermes.completed()] });
      const id = await startRun(f);
      await f.gateReached("g");
      f.sweep({ transports: true, statuses: false });
      expect((await openEvents(f.url, id, KEY)).status).toBe(404);
      expect((await get(f, `/v1/runs/${id}`)).json.status).toBe("running");
      expect((await post(f, `/v1/runs/${id}/stop`)).status).toBe(200);
    }
  });

  it("sweeps old terminal statuses: GET 404, except newer idempotent runs (durable)", async () => {
    const f = start({ script: [hermes.completed()] });
    const plain = await startRun(f);
    const durable = await startRun(f, { input: "x" }, { "idempotency-key": "d1" });
    await f.finished(plain);
    await f.finished(durable);
    f.sweep();
    expect((await get(f, `/v1/runs/${plain}`)).status).toBe(404);
    expect((await get(f, `/v1/runs/${durable}`)).json.status).toBe("completed");
  });
});

describe.each(BOTH)("auth, input errors and routes on the %s server", (generation) => {
  const UNAUTHORIZED = {
    error: { message: "Invalid API key", type: "invalid_request_error", code: "invalid_api_key" },
  };

  it("answers 401 with the real body for a missing or wrong key on every runs route; /health needs none", async () => {
    const f = start({ generation, script: [hermes.stall()] });
    const id = await startRun(f);
    for (const auth of [undefined, "wrong", `${KEY}x`]) {
      for (const [method, path] of [
        ["POST", "/v1/runs"],
        ["GET", `/v1/runs/${id}`],
        ["GET", `/v1/runs/${id}/events`],
        ["POST", `/v1/runs/${id}/approval`],
        ["POST", `/v1/runs/${id}/stop`],
      ]) {
        const r = await call(f.url, method!, path!, { key: auth, body: { input: "x", choice: "once" } });
        expect([r.status, r.json], `${method} ${path} ${auth}`).toEqual([401, UNAUTHORIZED]);
      }
    }
    expect(await call(f.url, "GET", "/health")).toMatchObject({
      status: 200,
      json: { status: "ok", platform: "hermes-agent" },
    });
    const detailed = await call(f.url, "GET", "/health/detailed");
    expect(detailed.status).toBe(generation === "newer" ? 401 : 200);
    expect((await call(f.url, "GET", "/health/detailed", { key: KEY })).status).toBe(200);
    expect(f.runs[0]!.stopRequests).toBe(0);
  });

  it("lets everything in when no key is configured", async () => {
    const f = start({ generation, apiKey: undefined });
    expect((await call(f.url, "POST", "/v1/runs", { body: { input: "x" } })).status).toBe(202);
  });

  it("rejects bad bodies with the real 400s and 413", async () => {
    const f = start({ generation, maxBodyBytes: 1000 });
    const cases: [unknown, string][] = [
      [{}, "Missing 'input' field"],
      [{ input: "" }, "Missing 'input' field"],
      [{ input: 42 }, "No user message found in input"],
      [{ input: [{ role: "user", content: "" }] }, "No user message found in input"],
      [{ input: "x", conversation_history: "nope" }, "'conversation_history' must be an array of message objects"],
      [
        { input: "x", conversation_history: [{ role: "user" }] },
        "conversation_history[0] must have 'role' and 'content' fields",
      ],
    ];
    for (const [body, message] of cases) {
      const r = await call(f.url, "POST", "/v1/runs", { key: KEY, body });
      expect([r.status, r.json.error.message], JSON.stringify(body)).toEqual([400, message]);
    }
    expect((await call(f.url, "POST", "/v1/runs", { key: KEY, raw: "{not json" })).json.error.message).toBe(
      "Invalid JSON",
    );
    const big = await call(f.url, "POST", "/v1/runs", { key: KEY, body: { input: "x".repeat(2000) } });
    expect([big.status, big.json.error]).toEqual([
      413,
      { message: "Request body too large.", type: "invalid_request_error", param: null, code: "body_too_large" },
    ]);
    expect(f.runs).toHaveLength(0);
  });

  it("answers unknown routes 404 and wrong methods 405, as aiohttp does", async () => {
    const f = start({ generation });
    expect(await call(f.url, "GET", "/v1/nothing", { key: KEY })).toMatchObject({
      status: 404,
      text: "404: Not Found",
    });
    expect(await call(f.url, "GET", "/v1/runs", { key: KEY })).toMatchObject({
      status: 405,
      text: "405: Method Not Allowed",
    });
    expect((await call(f.url, "POST", "/v1/runs/run_x", { key: KEY })).status).toBe(405);
  });
});
