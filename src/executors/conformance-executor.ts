import type { Artifact, Part } from "../protocol/types";
import { newId } from "../clock";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "./executor";
import { messageText } from "./executor";

/**
 * One step of a scenario, in the order the kit expects to see it on a stream:
 * - `working`: a WORKING status update carrying this text (events.progress);
 * - `artifact`: a streamed artifact event (events.artifact); `chunk` names the artifact the chunk belongs to,
 *   `append` extends it, `lastChunk` closes it;
 * - `wait`: stay as we are for `ms` (a long-running task), cut short when the task is aborted.
 */
type Step =
  | { do: "working"; text: string }
  | { do: "artifact"; chunk: string; parts: Part[]; append?: boolean; lastChunk?: boolean }
  | { do: "wait"; ms: (options: Required<ConformanceOptions>) => number };

/** How a scenario ends: the task's state and status text, artifacts returned (not streamed), or a direct reply. */
interface Ending {
  state: ExecutionOutcome["state"];
  message?: string;
  artifacts?: Part[][];
  /** Answer with a Message carrying this text instead of a Task. */
  reply?: string;
}

interface Scenario {
  /** messageId prefix the kit uses for it (its ids are `<prefix>-<session>`). */
  prefix: string;
  steps: Step[];
  end: Ending;
}

export interface ConformanceOptions {
  /**
   * How long `test-resubscribe-message-id` stays WORKING: twice the kit's streaming timeout (2 s in the kit's
   * own scenario generator, "wait for 2x streaming timeout"), so a client can resubscribe mid-task.
   */
  longRunningMs?: number;
}

const STREAMING_TIMEOUT_MS = 2_000;
const DEFAULTS: Required<ConformanceOptions> = { longRunningMs: 2 * STREAMING_TIMEOUT_MS };

const text = (t: string): Part => ({ text: t });
const FILE_PART: Part = { raw: Buffer.from("tck").toString("base64"), filename: "output.txt", mediaType: "text/plain" };
const FILE_URL_PART: Part = { url: "https://example.com/output.txt", filename: "output.txt", mediaType: "text/plain" };
const DATA_PART: Part = { data: { key: "value", count: 42 } };

const working = (t = "Working"): Step => ({ do: "working", text: t });
const streamed = (parts: Part[]): Step => ({ do: "artifact", chunk: "result", parts, lastChunk: true });
const completed: Ending = { state: "TASK_STATE_COMPLETED" };

/**
 * The kit's scenarios (a2a-tck 1.0-dev, scenarios/core_operations.feature and scenarios/streaming.feature), one
 * row each. Matched longest prefix first, so `tck-artifact-file-url` wins over `tck-artifact-file`.
 */
const TABLE: Scenario[] = [
  // Core operations
  { prefix: "tck-complete-task", steps: [], end: { state: "TASK_STATE_COMPLETED", message: "Hello from TCK" } },
  { prefix: "tck-artifact-text", steps: [], end: { ...completed, artifacts: [[text("Generated text content")]] } },
  { prefix: "tck-artifact-file", steps: [], end: { ...completed, artifacts: [[FILE_PART]] } },
  { prefix: "tck-artifact-file-url", steps: [], end: { ...completed, artifacts: [[FILE_URL_PART]] } },
  { prefix: "tck-artifact-data", steps: [], end: { ...completed, artifacts: [[DATA_PART]] } },
  { prefix: "tck-message-response", steps: [], end: { ...completed, reply: "Direct message response" } },
  // Waits for a follow-up message (same taskId); that message's own prefix decides what happens next.
  {
    prefix: "tck-input-required",
    steps: [],
    end: { state: "TASK_STATE_INPUT_REQUIRED", message: "Input required: send a follow-up message to continue" },
  },
  { prefix: "tck-reject-task", steps: [], end: { state: "TASK_STATE_REJECTED", message: "rejected" } },
  // Streaming
  { prefix: "tck-stream-001", steps: [working(), streamed([text("Stream hello from TCK")])], end: completed },
  { prefix: "tck-stream-002", steps: [], end: completed },
  { prefix: "tck-stream-003", steps: [working(), streamed([text("Stream task lifecycle")])], end: completed },
  { prefix: "tck-stream-ordering-001", steps: [working(), streamed([text("Ordered output")])], end: completed },
  { prefix: "tck-stream-artifact-text", steps: [working(), streamed([text("Streamed text content")])], end: completed },
  { prefix: "tck-stream-artifact-file", steps: [working(), streamed([FILE_PART])], end: completed },
  {
    prefix: "tck-stream-artifact-chunked",
    steps: [
      working(),
      { do: "artifact", chunk: "chunked", parts: [text("chunk-1 ")] },
      { do: "artifact", chunk: "chunked", parts: [text("chunk-2")], append: true, lastChunk: true },
    ],
    end: completed,
  },
  // Long-running, for SubscribeToTask while it works.
  {
    prefix: "test-resubscribe-message-id",
    steps: [working(), { do: "wait", ms: (o) => o.longRunningMs }],
    end: completed,
  },
];
const SCENARIOS = [...TABLE].sort((a, b) => b.prefix.length - a.prefix.length);

/**
 * Behaves as the A2A conformance kit (a2a-tck) expects of a system under test, keyed by the messageId prefix
 * of the message being executed: the one that starts a task, or a follow-up to a task waiting for input (the
 * kit continues `tck-input-required` tasks with `tck-complete-task` or another `tck-input-required`).
 * Anything else completes with a text artifact echoing the message.
 */
export class ConformanceExecutor implements AgentExecutor {
  readonly kind = "conformance";
  /** Scenarios are deterministic and touch nothing outside the task: an interrupted one simply runs again. */
  readonly onRestart = "rerun";
  private readonly options: Required<ConformanceOptions>;

  constructor(options: ConformanceOptions = {}) {
    this.options = { ...DEFAULTS, ...options };
  }

  async execute(request: ExecutionRequest): Promise<ExecutionOutcome> {
    const { messageId } = request.message;
    const scenario = SCENARIOS.find((s) => messageId.startsWith(s.prefix)) ?? defaultScenario(request);
    const artifactId = (name: string) => `${request.taskId}-${name}`;

    for (const step of scenario.steps) {
      if (request.signal.aborted) return canceled(request.signal);
      switch (step.do) {
        case "working":
          request.events.progress(step.text);
          break;
        case "artifact":
          request.events.artifact(
            { artifactId: artifactId(step.chunk), parts: step.parts },
            { append: step.append, lastChunk: step.lastChunk },
          );
          break;
        case "wait":
          await sleep(step.ms(this.options), request.signal);
          break;
      }
    }
    if (request.signal.aborted) return canceled(request.signal);

    const { end } = scenario;
    const outcome: ExecutionOutcome = { state: end.state };
    if (end.message) outcome.message = end.message;
    if (end.artifacts)
      outcome.artifacts = end.artifacts.map((parts, i): Artifact => ({
        artifactId: artifactId(`artifact-${i + 1}`),
        parts,
      }));
    if (end.reply) outcome.reply = { messageId: newId(), role: "ROLE_AGENT", parts: [text(end.reply)] };
    return outcome;
  }
}

/** No scenario of the kit: complete, echoing the message's text as an artifact. */
function defaultScenario(request: ExecutionRequest): Scenario {
  return {
    prefix: "",
    steps: [],
    end: {
      state: "TASK_STATE_COMPLETED",
      message: `Hello from TCK (no scenario for messageId ${request.message.messageId})`,
      artifacts: [[text(messageText(request.message) || "Hello from TCK")]],
    },
  };
}

function canceled(signal: AbortSignal): ExecutionOutcome {
  const reason = signal.reason instanceof Error ? signal.reason.message : "canceled";
  return { state: "TASK_STATE_CANCELED", message: reason };
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
