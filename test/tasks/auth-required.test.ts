/**
 * AUTH_REQUIRED (A2A v1.0 §7.6, in-task authorization): a model endpoint that refuses the node's key puts the
 * task in TASK_STATE_AUTH_REQUIRED with a status message; a blocking SendMessage returns there, as at
 * INPUT_REQUIRED; the task keeps that state across a restart; once the operator fixed the key, the next message
 * to the task runs the refused message again; cancel ends it. The model servers are the fakes (OpenAI's and
 * Hermes' own 401 answers); everything else is real: nodes in-process over mTLS, SQLite, the CLI.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startNode, type RunningNode } from "../../src/node";
import { DEFAULTS, type ServeConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { httpJsonDriver, jsonRpcDriver, type BindingName } from "../helpers/bindings";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { hermes, startFakeHermes, type FakeHermes } from "../fakes/hermes/server";
import { answerText, startHermesNode, type HermesNode } from "../helpers/hermes-node";
import { userMessage } from "../helpers/rpc";
import { openSse } from "../helpers/sse";
import { OpenAiCompatibleExecutor } from "../../src/executors/openai-executor";
import { HermesExecutor } from "../../src/executors/hermes-executor";
import type { Message } from "../../src/protocol/types";

const RIGHT = "sk-right-key-0123456789abcdef";
const WRONG = "sk-wrong-key-9876543210fedcba";

describe("the fake OpenAI server answers a missing or wrong key as OpenAI does", () => {
  let model: FakeModel;
  beforeAll(() => {
    model = startFakeModel({ apiKey: RIGHT });
  });
  afterAll(() => model.stop());
  const post = (auth?: string) =>
    fetch(`${model.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });

  it("no key: 401, code null, the 'You didn't provide an API key' message", async () => {
    const res = await post();
    expect(res.status).toBe(401);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ type: "invalid_request_error", param: null, code: null });
    expect(body.error.message).toMatch(
      /^You didn't provide an API key\. You need to provide your API key in an Authorization header using Bearer auth/,
    );
  });

  it("the openai executor's readiness says the key is refused", async () => {
    const executor = new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m", apiKey: WRONG });
    expect(await executor.ready(AbortSignal.timeout(5000))).toEqual({
      ready: false,
      detail: `${model.url}/models refused the API key (HTTP 401); set OPENAI_API_KEY or --model-api-key-file (tasks wait in auth-required meanwhile)`,
    });
  });

  it("a wrong key: 401 invalid_api_key, the key masked as OpenAI masks it (first 8, last 4); a short one shown whole", async () => {
    let body = (await (await post(`Bearer ${WRONG}`)).json()) as any;
    expect(body).toEqual({
      error: {
        message: `Incorrect API key provided: sk-wrong${"*".repeat(WRONG.length - 12)}dcba. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    });
    body = (await (await post("Bearer kk")).json()) as any;
    expect(body.error.message).toMatch(/^Incorrect API key provided: kk\. /);
    expect((await post(`Bearer ${RIGHT}`)).status).toBe(200);
    expect((await fetch(`${model.url}/models`)).status).toBe(401);
  });
});

describe("the openai executor on a 403 (a key the endpoint knows, not allowed to do this)", () => {
  it("is AUTH_REQUIRED too, quoting the error's type and code, not its message", async () => {
    const body = JSON.stringify({
      error: {
        message: "Country, region, or territory not supported",
        type: "request_forbidden",
        param: null,
        code: "unsupported_country_region_territory",
      },
    });
    const model = startFakeModel({ fail: { status: 403, body } });
    try {
      const executor = new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m", apiKey: RIGHT });
      const noop = () => {};
      const outcome = await executor.execute({
        taskId: "t",
        contextId: "c",
        message: userMessage("hi") as Message,
        history: async () => [],
        caller: "alpha",
        signal: new AbortController().signal,
        events: { progress: noop, artifact: noop, note: async () => {} },
        metadata: {},
        state: {},
        resumed: false,
        input: () => Promise.reject(new Error("no questions")),
      });
      expect(outcome.state).toBe("TASK_STATE_AUTH_REQUIRED");
      expect(outcome.message).toContain(
        "does not allow this node's API key to do this (HTTP 403: request_forbidden, unsupported_country_region_territory)",
      );
      expect(outcome.message).not.toContain("Country");
    } finally {
      model.stop();
    }
  });
});

describe("an openai node whose model endpoint refuses its key", () => {
  let fleet: Fleet;
  let alpha: TlsIdentity;
  let model: FakeModel;
  let node: RunningNode;
  const logged: string[] = [];
  const quiet = createLogger((line) => void logged.push(line), "warn", "json");
  const config = (key: string | undefined): ServeConfig => ({
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    executor: "openai",
    modelUrl: model.url,
    modelApiKey: key,
  });
  const restartWith = async (key: string | undefined) => {
    await node.stop();
    node = await startNode(fleet.homes.beta, config(key), quiet);
    expect((await cli("peers", "add", "beta", node.url, "--replace")).code).toBe(0);
  };
  async function cli(...args: string[]) {
    const io = bufferIo({});
    const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
    return { code, out: io.out(), err: io.err() };
  }

  beforeAll(async () => {
    fleet = await makeFleet(["alpha", "beta"]);
    alpha = fleet.identity("alpha");
    model = startFakeModel({ apiKey: RIGHT, reply: (m) => `saw ${m.length} message(s), last: ${m.at(-1)?.content}` });
    node = await startNode(fleet.homes.beta, config(WRONG), quiet);
    expect((await cli("peers", "add", "beta", node.url)).code).toBe(0);
  });
  afterAll(async () => {
    await node?.stop();
    model?.stop();
    fleet?.cleanup();
  });

  describe.each(["JSONRPC", "HTTP+JSON"] as BindingName[])("over %s", (name) => {
    const b = () => (name === "JSONRPC" ? jsonRpcDriver(node.url) : httpJsonDriver(node.url));

    it("a blocking SendMessage returns the task AUTH_REQUIRED, its status saying what was refused and what to do, without the key", async () => {
      const o = await b().call(alpha, "SendMessage", { message: userMessage("what is 2+2?") });
      expect(o.ok, o.reply.text).toBe(true);
      const task = o.result.task;
      expect(task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
      const text = task.status.message.parts[0].text as string;
      expect(text).toContain(
        `model endpoint ${model.url}/chat/completions refused this node's API key (HTTP 401: invalid_request_error, invalid_api_key)`,
      );
      expect(text).toContain("send any message to this task to run it again, or cancel it");
      expect(text).not.toContain("sk-wrong");
      expect(task.artifacts ?? []).toEqual([]);
      // The operator, who must fix it, hears of it in the log (a warning, with the reason and not the key).
      const warned = logged.map((l) => JSON.parse(l)).find((l) => l.task_id === task.id);
      expect(warned).toMatchObject({
        level: "warn",
        msg: "task waits for an authorization: the executor's backend refused this node's credentials",
        peer: "alpha",
        reason: text,
      });
      expect(logged.join("\n")).not.toContain("sk-wrong");
      // A message while the key is still wrong: refused again, and still AUTH_REQUIRED.
      const again = await b().call(alpha, "SendMessage", { message: userMessage("retry", { taskId: task.id }) });
      expect(again.result.task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
      // Cancel ends it.
      const canceled = await b().call(alpha, "CancelTask", { id: task.id });
      expect(canceled.result.status.state).toBe("TASK_STATE_CANCELED");
    });
  });

  it("a stream ends at AUTH_REQUIRED, its last event the status with the message", async () => {
    const s = await openSse(`${node.url}/`, alpha, "SendStreamingMessage", { message: userMessage("stream me") });
    const events = await s.rest();
    const last = events.at(-1)!.data.result.statusUpdate.status;
    expect(last.state).toBe("TASK_STATE_AUTH_REQUIRED");
    expect(last.message.parts[0].text).toContain("refused this node's API key");
  });

  it("the task stays AUTH_REQUIRED across a restart; once the key is fixed, the next message runs the refused message again", async () => {
    const asked = await jsonRpcDriver(node.url).call(alpha, "SendMessage", {
      message: userMessage("name three primes"),
    });
    const id = asked.result.task.id;
    expect(asked.result.task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    await restartWith(WRONG);
    expect((await jsonRpcDriver(node.url).call(alpha, "GetTask", { id })).result.status.state).toBe(
      "TASK_STATE_AUTH_REQUIRED",
    );
    await restartWith(RIGHT);
    const before = model.requests.length;
    const retried = await httpJsonDriver(node.url).call(alpha, "SendMessage", {
      message: userMessage("retry", { taskId: id }),
    });
    const task = retried.result.task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    // The model got the refused message, alone: no "retry", no refusal text from the agent in its history.
    expect(answerText(task)).toBe("saw 1 message(s), last: name three primes");
    expect(model.requests.slice(before).map((r) => r.body.messages)).toEqual([
      [{ role: "user", content: "name three primes" }],
    ]);
    expect(task.metadata["a2a-node/auth-required"]).toBeNull();
    // The task's history keeps everything that was said.
    expect(task.history.map((m: any) => [m.role, m.parts[0].text])).toEqual([
      ["ROLE_USER", "name three primes"],
      ["ROLE_AGENT", expect.stringMatching(/^model endpoint .* refused this node's API key/)],
      ["ROLE_USER", "retry"],
    ]);
    await restartWith(WRONG);
  });

  it("the CLI: send --wait exits 6 and says what is refused and how to retry or cancel; status shows the same", async () => {
    const r = await cli("send", "--agent", "beta", "--task", "hello", "--wait");
    expect(r.code).toBe(6);
    const id = /task (\S+) accepted/.exec(r.err)![1];
    expect(r.err).toContain(
      `task ${id} auth-required (peer 'beta'): model endpoint ${model.url}/chat/completions refused this node's API key`,
    );
    expect(r.err).toContain(
      `retry with: a2a-node send --agent beta --task-id ${id} --task "retry" --wait; or give up with: a2a-node cancel --agent beta --task-id ${id}`,
    );
    const s = await cli("status", "--agent", "beta", "--task-id", id);
    expect(s.code).toBe(0);
    expect(s.out).toContain(`task ${id} auth-required (peer 'beta'): model endpoint`);
    expect(s.err).toContain("retry with: a2a-node send --agent beta");
  });

  it("a key file read again on SIGHUP (reload) applies without a restart: the next message to the task runs it", async () => {
    const asked = await jsonRpcDriver(node.url).call(alpha, "SendMessage", { message: userMessage("reload me") });
    const id = asked.result.task.id;
    expect(asked.result.task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    const { applied, needsRestart } = await node.reload(config(RIGHT));
    expect(applied).toEqual(["model_api_key_file"]);
    expect(needsRestart).toEqual([]);
    const retried = await jsonRpcDriver(node.url).call(alpha, "SendMessage", {
      message: userMessage("retry", { taskId: id }),
    });
    expect(retried.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(retried.result.task)).toBe("saw 1 message(s), last: reload me");
    await node.reload(config(WRONG));
    const again = await jsonRpcDriver(node.url).call(alpha, "SendMessage", { message: userMessage("and now?") });
    expect(again.result.task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
  });

  it("a node with no key at all says it has none", async () => {
    await restartWith(undefined);
    const o = await jsonRpcDriver(node.url).call(alpha, "SendMessage", { message: userMessage("hi") });
    expect(o.result.task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    expect(o.result.task.status.message.parts[0].text).toContain(
      "wants an API key, and this node has none (HTTP 401: invalid_request_error)",
    );
    await restartWith(WRONG);
  });
});

describe.each(["newer", "older"] as const)("a Hermes node whose %s Hermes refuses its key", (generation) => {
  const KEY = "hermes-right-key";
  let fake: FakeHermes;
  let node: HermesNode | undefined;
  afterEach(async () => {
    await node?.close();
    await fake?.stop();
    node = undefined;
  });

  it("ends AUTH_REQUIRED (Hermes' own 401 invalid_api_key), stays so across a restart, and runs the refused message once the key is right", async () => {
    fake = startFakeHermes({ generation, apiKey: KEY, script: [hermes.delta("fine"), hermes.completed()] });
    const options = { apiKey: "not-the-key" };
    const n = (node = await startHermesNode(fake, options));
    const task = await n.send("check the disk");
    expect(task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    const text = task.status.message!.parts[0].text!;
    expect(text).toContain(`Hermes at ${fake.url} refused this node's API key (HTTP 401 invalid_api_key)`);
    expect(text).not.toContain("not-the-key");
    // No run was started: the key was refused at the node's first call (what the server is, before the run).
    expect(fake.requests.filter((r) => r.path.startsWith("/v1/")).map((r) => [r.method, r.path, r.status])).toEqual([
      ["GET", "/v1/capabilities", 401],
    ]);
    options.apiKey = KEY;
    await n.restart();
    expect((await n.get(task.id)).status.state).toBe("TASK_STATE_AUTH_REQUIRED");
    const done = await n.answer(task.id, "retry");
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answerText(done)).toBe("fine");
    const started = fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/runs").at(-1)!;
    expect(started.body.input).toBe("check the disk");
  });

  it("reads its key at each call, so a key the node reloads (SIGHUP) applies at once", async () => {
    fake = startFakeHermes({ generation, apiKey: KEY });
    const options = { baseUrl: fake.url, apiKey: "not-the-key" };
    const executor = new HermesExecutor(options);
    expect((await executor.ready(AbortSignal.timeout(5000))).ready).toBe(false);
    options.apiKey = KEY;
    expect(await executor.ready(AbortSignal.timeout(5000))).toEqual({
      ready: true,
      detail: `Hermes at ${fake.url} accepted the API key`,
    });
  });
});
