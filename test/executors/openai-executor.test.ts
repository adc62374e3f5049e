/**
 * OpenAiCompatibleExecutor against a fake OpenAI-compatible server on loopback (real HTTP): each mapping of
 * issue 4, first with the executor alone and a recording events sink, then through TaskRunner and the
 * request handler on a real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OpenAiCompatibleExecutor, type OpenAiExecutorOptions } from "../../src/executors/openai-executor";
import type { ExecutionEvents, ExecutionRequest } from "../../src/executors/executor";
import { A2AError } from "../../src/protocol/errors";
import type { StreamItem } from "../../src/rpc/request-handler";
import type { Artifact, Message, Part, Task } from "../../src/protocol/types";
import type { OpenDatabase } from "../../src/store/database";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { startFakeModel, type FakeModel, type FakeModelOptions } from "../fakes/openai";
import { sqliteTaskStore, taskFixture } from "../helpers/task-fixture";

const models: FakeModel[] = [];
function fake(options: FakeModelOptions = {}): FakeModel {
  const m = startFakeModel(options);
  models.push(m);
  return m;
}
afterEach(() => {
  for (const m of models.splice(0)) {
    m.release();
    m.stop();
  }
});

const message = (parts: Part[] | string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: typeof parts === "string" ? [{ text: parts }] : parts,
  ...extra,
});

interface Chunk {
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

/** An ExecutionEvents sink that records every call, and lets a test await the n-th artifact chunk. */
function recorder() {
  const chunks: Chunk[] = [];
  const progress: { text: string; metadata?: Record<string, unknown> }[] = [];
  const notes: Record<string, unknown>[] = [];
  const waiters: { n: number; resolve(): void }[] = [];
  const events: ExecutionEvents = {
    progress: (text, metadata) => progress.push({ text, metadata }),
    artifact: (artifact, options = {}) => {
      chunks.push({ artifact, ...options });
      for (let i = waiters.length - 1; i >= 0; i--)
        if (chunks.length >= waiters[i]!.n) waiters.splice(i, 1)[0]!.resolve();
    },
    note: async (m) => void notes.push(m),
  };
  return {
    events,
    chunks,
    progress,
    notes,
    /** The concatenated text of every chunk. */
    text: () => chunks.map((c) => c.artifact.parts.map((p) => p.text ?? "").join("")).join(""),
    chunk: (n: number) =>
      chunks.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
}

function requestFor(msg: Message, events: ExecutionEvents, extra: Partial<ExecutionRequest> = {}): ExecutionRequest {
  return {
    taskId: "T1",
    contextId: "C1",
    message: msg,
    history: async () => [],
    caller: "alpha",
    signal: new AbortController().signal,
    events,
    metadata: {},
    state: {},
    resumed: false,
    input: () => Promise.reject(new Error("this executor asks no questions")),
    ...extra,
  };
}

function executor(model: FakeModel | string, options: Partial<OpenAiExecutorOptions> = {}) {
  return new OpenAiCompatibleExecutor({
    baseUrl: typeof model === "string" ? model : model.url,
    model: "m",
    retryBaseMs: 5,
    ...options,
  });
}

/** A loopback port where nothing listens (the OS gave it to us, then we closed it). */
function deadPort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

describe("OpenAiCompatibleExecutor, alone", () => {
  it("turns each streamed delta into an artifact chunk, in order: append false then true, then a lastChunk", async () => {
    const tokens = ["Hel", "lo", ", wor", "ld", "!"];
    const model = fake({ tokens, tokenDelayMs: 2 });
    const rec = recorder();
    const outcome = await executor(model).execute(requestFor(message("greet"), rec.events));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    const texts = rec.chunks.map((c) => c.artifact.parts.map((p) => p.text).join(""));
    expect(texts.slice(0, tokens.length)).toEqual(tokens);
    expect(rec.chunks.map((c) => c.append === true)).toEqual([false, true, true, true, true, true]);
    expect(rec.chunks.map((c) => c.lastChunk === true)).toEqual([false, false, false, false, false, true]);
    expect(new Set(rec.chunks.map((c) => c.artifact.artifactId))).toEqual(new Set(["T1-answer"]));
    expect(rec.text()).toBe("Hello, world!");
    expect(model.requests[0]!.body.stream).toBe(true);
  });

  it("reads a plain JSON answer from a server that does not stream, as one final chunk", async () => {
    const model = fake({
      stream: false,
      reply: () => "the whole answer at once",
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    });
    const rec = recorder();
    const outcome = await executor(model).execute(requestFor(message("q"), rec.events));
    expect(model.requests[0]!.body.stream).toBe(true); // it asked for a stream and got JSON
    expect(outcome).toMatchObject({ state: "TASK_STATE_COMPLETED", metadata: { usage: { total_tokens: 8 } } });
    expect(rec.chunks).toHaveLength(1);
    expect(rec.chunks[0]).toMatchObject({
      lastChunk: true,
      artifact: { parts: [{ text: "the whole answer at once" }] },
    });
    expect(rec.chunks[0]!.append).not.toBe(true);
  });

  it("asks without streaming when configured with stream: false", async () => {
    const model = fake();
    const rec = recorder();
    const outcome = await executor(model, { stream: false }).execute(requestFor(message("plain"), rec.events));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(model.requests[0]!.body.stream).toBe(false);
    expect(model.requests[0]!.body.stream_options).toBeUndefined();
    expect(rec.text()).toBe("echo: plain");
  });

  it("sends the configured model, system prompt, temperature, max tokens and API key", async () => {
    const model = fake();
    const rec = recorder();
    const key = `sk-${crypto.randomUUID()}`;
    await executor(model, {
      model: "qwen2.5-7b",
      systemPrompt: "You are terse.",
      temperature: 0.25,
      maxTokens: 77,
      apiKey: key,
    }).execute(requestFor(message("hi"), rec.events));
    const { body, headers } = model.requests[0]!;
    expect(headers.authorization).toBe(`Bearer ${key}`);
    expect(headers["content-type"]).toContain("application/json");
    expect(body).toMatchObject({
      model: "qwen2.5-7b",
      temperature: 0.25,
      max_tokens: 77,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(body.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "hi" },
    ]);
  });

  it("sends no Authorization header, temperature or max_tokens when none are configured", async () => {
    const model = fake();
    await executor(model).execute(requestFor(message("hi"), recorder().events));
    const { body, headers } = model.requests[0]!;
    expect(headers.authorization).toBeUndefined();
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("max_tokens");
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("bounds the history by historyChars: the oldest turns are dropped first, the current message always goes", async () => {
    const model = fake();
    const turn = (role: Message["role"], text: string) => message(text, { role });
    const history = [
      turn("ROLE_USER", "a".repeat(10)),
      turn("ROLE_AGENT", "b".repeat(10)),
      turn("ROLE_USER", "c".repeat(10)),
    ];
    // Budget 30: the current message (4) leaves 26, enough for the two newest turns (20) but not the oldest.
    await executor(model, { historyChars: 30, systemPrompt: "sys" }).execute(
      requestFor(message("now?"), recorder().events, { history: async () => history }),
    );
    expect(model.requests[0]!.body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "assistant", content: "b".repeat(10) },
      { role: "user", content: "c".repeat(10) },
      { role: "user", content: "now?" },
    ]);

    // A current message larger than the whole budget still goes, alone.
    const big = "z".repeat(50);
    await executor(model, { historyChars: 30 }).execute(
      requestFor(message(big), recorder().events, { history: async () => history }),
    );
    expect(model.requests[1]!.body.messages).toEqual([{ role: "user", content: big }]);

    // With room for everything, all turns go, oldest first, and the current message is not repeated.
    const current = message("last");
    await executor(model, { historyChars: 1000 }).execute(
      requestFor(current, recorder().events, { history: async () => [...history, current] }),
    );
    expect(model.requests[2]!.body.messages.map((m: { content: string }) => m.content)).toEqual([
      "a".repeat(10),
      "b".repeat(10),
      "c".repeat(10),
      "last",
    ]);
  });

  it("passes data parts as JSON text", async () => {
    const model = fake();
    const data = { host: "db-1", ports: [22, 5432], nested: { ok: true } };
    const msg = message([{ text: "summarize this:" }, { data }]);
    const ex = executor(model);
    expect(ex.check(msg)).toBeUndefined();
    await ex.execute(requestFor(msg, recorder().events));
    const content = model.requests[0]!.body.messages.at(-1).content as string;
    expect(content).toBe(`summarize this:\n${JSON.stringify(data)}`);
    expect(JSON.parse(content.split("\n")[1]!)).toEqual(data);
  });

  it.each([
    ["raw bytes", { raw: Buffer.from("%PDF-1.7").toString("base64"), mediaType: "application/pdf", filename: "a.pdf" }],
    ["a url", { url: "https://example.com/picture.png", mediaType: "image/png" }],
  ])(
    "refuses a message with %s through check(), as content it cannot take (ContentTypeNotSupported, -32005)",
    (_label, part) => {
      const refusal = executor("http://127.0.0.1:1/v1").check(message([{ text: "look at this" }, part as Part]));
      expect(refusal?.kind).toBe("content-type");
      expect(refusal!.message).toMatch(/part 1/);
    },
  );

  it("retries a connection refused 3 times, then fails naming the endpoint", async () => {
    const url = `http://127.0.0.1:${deadPort()}/v1`;
    const outcome = await executor(url).execute(requestFor(message("anyone?"), recorder().events));
    expect(outcome.state).toBe("TASK_STATE_FAILED");
    expect(outcome.message).toContain(`${url}/chat/completions`);
    expect(outcome.message).toMatch(/unreachable after 3 attempts/);
  });

  it("gets through when the server accepts on the 3rd connection attempt", async () => {
    const model = fake({ refuseFirst: 2 });
    const rec = recorder();
    const outcome = await executor(model).execute(requestFor(message("third time"), rec.events));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(model.attempts).toBe(3);
    expect(model.requests).toHaveLength(1);
    expect(rec.text()).toBe("echo: third time");
  });

  it("makes exactly 3 connection attempts against a server that keeps resetting, then fails naming it", async () => {
    const model = fake({ refuseFirst: 100 });
    const outcome = await executor(model).execute(requestFor(message("x"), recorder().events));
    expect(outcome.state).toBe("TASK_STATE_FAILED");
    expect(outcome.message).toContain(`${model.url}/chat/completions`);
    expect(model.attempts).toBe(3);
    expect(model.requests).toHaveLength(0);
  });

  it("fails, saying after how many characters, when the connection drops mid-stream (and does not retry)", async () => {
    const tokens = ["alpha ", "beta ", "gamma ", "delta"];
    // Paced, so the tokens reach the executor before the connection drops.
    const model = fake({ tokens, failAfterTokens: 3, tokenDelayMs: 20 });
    const rec = recorder();
    const outcome = await executor(model).execute(requestFor(message("x"), rec.events));
    const sent = tokens.slice(0, 3).join("");
    expect(outcome.state).toBe("TASK_STATE_FAILED");
    expect(outcome.message).toContain(`${model.url}/chat/completions`);
    expect(outcome.message).toMatch(new RegExp(`broke off its answer after ${sent.length} characters`));
    expect(rec.text()).toBe(sent);
    expect(rec.chunks.some((c) => c.lastChunk)).toBe(false);
    expect(model.attempts).toBe(1); // tokens went out: nothing is asked again
  });

  it("stops the upstream request when the signal aborts mid-stream, and ends CANCELED", async () => {
    const model = fake({ tokens: ["one ", "two ", "three"], stallAfterTokens: 2 });
    const rec = recorder();
    const abort = new AbortController();
    const running = executor(model).execute(requestFor(message("x"), rec.events, { signal: abort.signal }));
    await rec.chunk(2);
    abort.abort(new Error("canceled by alpha"));
    const outcome = await running;
    await model.sawAbort();
    expect(outcome.state).toBe("TASK_STATE_CANCELED");
    expect(rec.text()).toBe("one two ");
    expect(model.abortCount).toBe(1);
  });

  it("reports readiness: ready when GET /models answers, not ready (naming the URL) when nothing listens", async () => {
    const model = fake();
    expect(await executor(model).ready(AbortSignal.timeout(5000))).toMatchObject({ ready: true });
    const url = `http://127.0.0.1:${deadPort()}/v1`;
    const r = await executor(url).ready(AbortSignal.timeout(5000));
    expect(r.ready).toBe(false);
    expect(r.detail).toContain(`${url}/models`);
  });
});

describe("OpenAiCompatibleExecutor, through TaskRunner on SQLite", () => {
  let database: OpenDatabase;
  let store: SqliteTaskStore;
  const alpha = { caller: { name: "alpha", fingerprint: "AA" } };

  beforeEach(() => {
    ({ database, store } = sqliteTaskStore("a2a-openai-exec-"));
  });
  afterEach(() => {
    database.close();
  });

  function handlerWith(model: FakeModel, options: Partial<OpenAiExecutorOptions> = {}) {
    const runnerOptions = { maxConcurrent: 4, maxQueued: 10, historyMessages: 20 };
    const { runner, handler } = taskFixture({ store, executor: executor(model, options), runnerOptions });
    return { runner, handler };
  }

  it("stores the whole answer as one artifact text, and the usage in the task's metadata", async () => {
    const tokens = Array.from({ length: 40 }, (_, i) => `tok${i} `);
    const usage = { prompt_tokens: 11, completion_tokens: 40, total_tokens: 51 };
    const model = fake({ tokens, usage });
    const { handler } = handlerWith(model);
    const r = (await handler.sendMessage({ message: message("count") }, alpha)) as { task: Task };
    expect(r.task.status.state).toBe("TASK_STATE_COMPLETED");
    const stored = (await store.get(r.task.id, "alpha"))!;
    expect(stored.artifacts).toHaveLength(1);
    expect(stored.artifacts![0]!.parts.map((p) => p.text).join("")).toBe(tokens.join(""));
    expect(stored.metadata?.usage).toEqual(usage);
    expect(r.task.metadata?.usage).toEqual(usage);
  });

  it("streams the tokens to an A2A subscriber as artifact updates, in order, closed by lastChunk, then COMPLETED", async () => {
    const tokens = ["The ", "answer ", "is ", "42."];
    const model = fake({ tokens, tokenDelayMs: 2 });
    const { handler } = handlerWith(model);
    const items: StreamItem[] = [];
    for await (const item of await handler.sendStreamingMessage({ message: message("q") }, alpha)) items.push(item);
    expect("task" in items[0]!.response).toBe(true);
    const updates = items.flatMap((i) => ("artifactUpdate" in i.response ? [i.response.artifactUpdate] : []));
    expect(updates.map((u) => u.artifact.parts[0]!.text)).toEqual([...tokens, ""]);
    expect(updates.map((u) => u.append === true)).toEqual([false, true, true, true, true]);
    expect(updates.map((u) => u.lastChunk === true)).toEqual([false, false, false, false, true]);
    const last = items.at(-1)!.response;
    expect("statusUpdate" in last && last.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    const seqs = items.slice(1).map((i) => i.seq!);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("refuses a raw file part with -32005 before any task exists, and never calls the model", async () => {
    const model = fake();
    const { handler } = handlerWith(model);
    const err = await handler
      .sendMessage(
        { message: message([{ raw: Buffer.from("bytes").toString("base64"), mediaType: "application/octet-stream" }]) },
        alpha,
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(A2AError);
    expect((err as A2AError).code).toBe(-32005);
    expect((await store.list("alpha", {})).totalSize).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it("ends the task FAILED naming the endpoint when the model is down", async () => {
    const url = `http://127.0.0.1:${deadPort()}/v1`;
    const runnerOptions = { maxConcurrent: 4, maxQueued: 10, historyMessages: 20 };
    const { handler } = taskFixture({ store, executor: executor(url), runnerOptions });
    const r = (await handler.sendMessage({ message: message("x") }, alpha)) as { task: Task };
    expect(r.task.status.state).toBe("TASK_STATE_FAILED");
    expect((await store.get(r.task.id, "alpha"))!.status.message?.parts[0]!.text).toContain(`${url}/chat/completions`);
  });

  it("cancel mid-stream: the model sees the client abort, the task ends CANCELED keeping what streamed", async () => {
    const model = fake({ tokens: ["first ", "second ", "never"], stallAfterTokens: 2 });
    const { handler, runner } = handlerWith(model);
    const r = (await handler.sendMessage(
      { message: message("x"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    await model.sentTokens(2);
    const settled = runner.settledOf(r.task.id)!;
    const canceled = await handler.cancelTask({ id: r.task.id }, alpha);
    await model.sawAbort();
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect((await settled).status.state).toBe("TASK_STATE_CANCELED");
    expect((await store.get(r.task.id, "alpha"))!.status.state).toBe("TASK_STATE_CANCELED");
  });
});

describe("skills with their own model", () => {
  it("a message's metadata.skill picks that skill's model, system prompt and temperature; others use the defaults", async () => {
    const model = startFakeModel();
    try {
      const exec = new OpenAiCompatibleExecutor({
        baseUrl: model.url,
        model: "default-model",
        systemPrompt: "default prompt",
        skills: { summarise: { model: "small-model", systemPrompt: "be brief", temperature: 0.1 } },
      });
      const run = (metadata?: Record<string, unknown>) =>
        exec.execute({
          taskId: "t",
          contextId: "c",
          message: {
            messageId: crypto.randomUUID(),
            role: "ROLE_USER",
            parts: [{ text: "hi" }],
            ...(metadata ? { metadata } : {}),
          },
          history: async () => [],
          caller: "alpha",
          signal: new AbortController().signal,
          events: { progress() {}, artifact() {}, note: async () => {} },
          metadata: {},
          state: {},
          resumed: false,
          input: () => Promise.reject(new Error("this executor asks no questions")),
        });
      await run({ skill: "summarise" });
      await run();
      expect(model.requests[0].body).toMatchObject({
        model: "small-model",
        temperature: 0.1,
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "hi" },
        ],
      });
      expect(model.requests[1].body.model).toBe("default-model");
      expect(model.requests[1].body.temperature).toBeUndefined();
      expect(model.requests[1].body.messages[0]).toEqual({ role: "system", content: "default prompt" });
      const refusal = exec.check({
        messageId: "m",
        role: "ROLE_USER",
        parts: [{ text: "x" }],
        metadata: { skill: "nope" },
      });
      expect(refusal?.kind).toBe("invalid");
      expect(refusal?.message).toContain("unknown skill 'nope'");
      expect(refusal?.message).toContain("summarise");
    } finally {
      model.stop();
    }
  });
});
