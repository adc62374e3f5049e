import { afterEach, describe, expect, it, vi } from "vitest";
import { ConformanceExecutor } from "../../src/executors/conformance-executor";
import type { ExecutionEvents, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import type { Artifact, Message, Part } from "../../src/protocol/types";

/** What the executor reported, in order: progress texts and artifact chunks with their flags. */
type Recorded =
  | { progress: string }
  | { artifact: Artifact; append?: boolean; lastChunk?: boolean }
  | { note: Record<string, unknown> };

function run(
  messageId: string,
  opts: {
    taskId?: string;
    text?: string;
    signal?: AbortSignal;
    executor?: ConformanceExecutor;
    followUpOf?: string;
  } = {},
) {
  const events: Recorded[] = [];
  const sink: ExecutionEvents = {
    progress: (text) => events.push({ progress: text }),
    artifact: (artifact, o = {}) =>
      events.push({ artifact, ...(o.append ? { append: true } : {}), ...(o.lastChunk ? { lastChunk: true } : {}) }),
    note: async (metadata) => void events.push({ note: metadata }),
  };
  const taskId = opts.taskId ?? "task-1";
  const message: Message = {
    messageId,
    role: "ROLE_USER",
    parts: [{ text: opts.text ?? "TCK test" }],
    contextId: "ctx-1",
  };
  if (opts.followUpOf) message.taskId = opts.followUpOf;
  const request: ExecutionRequest = {
    taskId,
    contextId: "ctx-1",
    message,
    history: async () => [],
    caller: "local",
    signal: opts.signal ?? new AbortController().signal,
    events: sink,
    metadata: {},
    state: {},
    resumed: false,
    input: () => Promise.reject(new Error("this executor asks no questions")),
  };
  const outcome = (opts.executor ?? new ConformanceExecutor()).execute(request);
  return { events, outcome };
}

/** The kit's ids are `<prefix>-<session>`. */
const id = (prefix: string) => `${prefix}-1a2b3c4d`;

const TEXT = (text: string): Part => ({ text });
const FILE: Part = { raw: "dGNr", filename: "output.txt", mediaType: "text/plain" }; // "tck"
const FILE_URL: Part = { url: "https://example.com/output.txt", filename: "output.txt", mediaType: "text/plain" };
const DATA: Part = { data: { key: "value", count: 42 } };

afterEach(() => {
  vi.useRealTimers();
});

describe("ConformanceExecutor: core operation scenarios (nothing streamed)", () => {
  const cases: { prefix: string; outcome: ExecutionOutcome }[] = [
    { prefix: "tck-complete-task", outcome: { state: "TASK_STATE_COMPLETED", message: "Hello from TCK" } },
    {
      prefix: "tck-artifact-text",
      outcome: {
        state: "TASK_STATE_COMPLETED",
        artifacts: [{ artifactId: "task-1-artifact-1", parts: [TEXT("Generated text content")] }],
      },
    },
    {
      prefix: "tck-artifact-file",
      outcome: { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "task-1-artifact-1", parts: [FILE] }] },
    },
    {
      prefix: "tck-artifact-file-url",
      outcome: { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "task-1-artifact-1", parts: [FILE_URL] }] },
    },
    {
      prefix: "tck-artifact-data",
      outcome: { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "task-1-artifact-1", parts: [DATA] }] },
    },
    {
      prefix: "tck-input-required",
      outcome: { state: "TASK_STATE_INPUT_REQUIRED", message: "Input required: send a follow-up message to continue" },
    },
    { prefix: "tck-reject-task", outcome: { state: "TASK_STATE_REJECTED", message: "rejected" } },
  ];

  for (const c of cases) {
    it(`${c.prefix}: ends ${c.outcome.state} with no streamed events`, async () => {
      const { events, outcome } = run(id(c.prefix));
      expect(await outcome).toEqual(c.outcome);
      expect(events).toEqual([]);
    });
  }

  it("the file artifact carries the bytes 'tck', base64-encoded", async () => {
    const { outcome } = run(id("tck-artifact-file"));
    const part = (await outcome).artifacts?.[0].parts[0];
    expect(Buffer.from(part?.raw ?? "", "base64").toString()).toBe("tck");
  });

  it("tck-message-response: answers with an agent Message instead of a task result", async () => {
    const { events, outcome } = run(id("tck-message-response"));
    const o = await outcome;
    expect(o.state).toBe("TASK_STATE_COMPLETED");
    expect(o.artifacts).toBeUndefined();
    expect(o.reply).toMatchObject({ role: "ROLE_AGENT", parts: [TEXT("Direct message response")] });
    expect(o.reply?.messageId).toBeTruthy();
    expect(events).toEqual([]);
  });

  it("replies get a fresh messageId each time", async () => {
    const a = await run(id("tck-message-response")).outcome;
    const b = await run(id("tck-message-response")).outcome;
    expect(a.reply?.messageId).not.toBe(b.reply?.messageId);
  });

  it("artifact ids are scoped to the task", async () => {
    const { outcome } = run(id("tck-artifact-text"), { taskId: "task-9" });
    expect((await outcome).artifacts?.[0].artifactId).toBe("task-9-artifact-1");
  });
});

describe("ConformanceExecutor: follow-ups to a task waiting for input", () => {
  it("a tck-complete-task follow-up completes the task", async () => {
    const { outcome } = run(id("tck-complete-task"), { followUpOf: "task-1" });
    expect(await outcome).toEqual({ state: "TASK_STATE_COMPLETED", message: "Hello from TCK" });
  });

  it("a tck-input-required follow-up keeps it waiting for input", async () => {
    const { outcome } = run(id("tck-input-required"), { followUpOf: "task-1" });
    expect((await outcome).state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("a follow-up with no scenario completes by default", async () => {
    const { outcome } = run(id("tck-infer-ctx"), { followUpOf: "task-1" });
    expect((await outcome).state).toBe("TASK_STATE_COMPLETED");
  });
});

describe("ConformanceExecutor: streaming scenarios", () => {
  const oneArtifact = (parts: Part[]): Recorded[] => [
    { progress: "Working" },
    { artifact: { artifactId: "task-1-result", parts }, lastChunk: true },
  ];
  const cases: { prefix: string; events: Recorded[] }[] = [
    { prefix: "tck-stream-001", events: oneArtifact([TEXT("Stream hello from TCK")]) },
    { prefix: "tck-stream-002", events: [] },
    { prefix: "tck-stream-003", events: oneArtifact([TEXT("Stream task lifecycle")]) },
    { prefix: "tck-stream-ordering-001", events: oneArtifact([TEXT("Ordered output")]) },
    { prefix: "tck-stream-artifact-text", events: oneArtifact([TEXT("Streamed text content")]) },
    { prefix: "tck-stream-artifact-file", events: oneArtifact([FILE]) },
    {
      prefix: "tck-stream-artifact-chunked",
      events: [
        { progress: "Working" },
        { artifact: { artifactId: "task-1-chunked", parts: [TEXT("chunk-1 ")] } },
        { artifact: { artifactId: "task-1-chunked", parts: [TEXT("chunk-2")] }, append: true, lastChunk: true },
      ],
    },
  ];

  for (const c of cases) {
    it(`${c.prefix}: streams ${c.events.length} event(s), then completes`, async () => {
      const { events, outcome } = run(id(c.prefix));
      // Everything was streamed already: the outcome carries no artifacts of its own.
      expect(await outcome).toEqual({ state: "TASK_STATE_COMPLETED" });
      expect(events).toEqual(c.events);
    });
  }
});

describe("ConformanceExecutor: test-resubscribe-message-id (long-running)", () => {
  const started = (p: Promise<ExecutionOutcome>) => {
    const state = { done: undefined as ExecutionOutcome | undefined };
    void p.then((o) => (state.done = o));
    return state;
  };

  it("stays WORKING for twice the kit's 2 s streaming timeout, then completes", async () => {
    vi.useFakeTimers();
    const { events, outcome } = run("test-resubscribe-message-id");
    const s = started(outcome);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual([{ progress: "Working" }]);
    await vi.advanceTimersByTimeAsync(3_999);
    expect(s.done).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(s.done).toEqual({ state: "TASK_STATE_COMPLETED" });
    expect(events).toEqual([{ progress: "Working" }]);
  });

  it("the wait can be configured", async () => {
    vi.useFakeTimers();
    const { outcome } = run("test-resubscribe-message-id", {
      executor: new ConformanceExecutor({ longRunningMs: 50 }),
    });
    const s = started(outcome);
    await vi.advanceTimersByTimeAsync(50);
    expect(s.done?.state).toBe("TASK_STATE_COMPLETED");
  });

  it("returns as soon as the task is aborted, without waiting out the timer", async () => {
    vi.useFakeTimers();
    const abort = new AbortController();
    const { outcome } = run("test-resubscribe-message-id", { signal: abort.signal });
    const s = started(outcome);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.done).toBeUndefined();
    abort.abort(new Error("canceled by local"));
    await vi.advanceTimersByTimeAsync(0);
    expect(s.done).toEqual({ state: "TASK_STATE_CANCELED", message: "canceled by local" });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("ConformanceExecutor: anything else", () => {
  it("completes with a text artifact echoing the message", async () => {
    const { events, outcome } = run(id("tck-dm-test-001"), { text: "Hello from TCK data model test" });
    expect(await outcome).toEqual({
      state: "TASK_STATE_COMPLETED",
      message: `Hello from TCK (no scenario for messageId ${id("tck-dm-test-001")})`,
      artifacts: [{ artifactId: "task-1-artifact-1", parts: [TEXT("Hello from TCK data model test")] }],
    });
    expect(events).toEqual([]);
  });

  it("a message with no text still gets a non-empty artifact", async () => {
    const events: Recorded[] = [];
    const outcome = await new ConformanceExecutor().execute({
      taskId: "task-1",
      contextId: "ctx-1",
      message: { messageId: "other", role: "ROLE_USER", parts: [{ data: { a: 1 } }] },
      history: async () => [],
      caller: "local",
      signal: new AbortController().signal,
      events: {
        progress: (text) => events.push({ progress: text }),
        artifact: (artifact) => events.push({ artifact }),
        note: async (note) => void events.push({ note }),
      },
      metadata: {},
      state: {},
      resumed: false,
      input: () => Promise.reject(new Error("this executor asks no questions")),
    });
    expect(outcome.artifacts?.[0].parts).toEqual([TEXT("Hello from TCK")]);
  });

  it("is rerun after a node restart (scenarios are deterministic)", () => {
    expect(new ConformanceExecutor().onRestart).toBe("rerun");
  });

  it("a prefix match needs the prefix at the start of the messageId", async () => {
    const { outcome } = run("x-tck-reject-task-1");
    expect((await outcome).state).toBe("TASK_STATE_COMPLETED");
  });

  it("a task aborted before it starts emits nothing and ends CANCELED", async () => {
    const abort = new AbortController();
    abort.abort(new Error("node shutting down"));
    const { events, outcome } = run(id("tck-stream-001"), { signal: abort.signal });
    expect(await outcome).toEqual({ state: "TASK_STATE_CANCELED", message: "node shutting down" });
    expect(events).toEqual([]);
  });
});
