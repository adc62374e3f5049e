import type { Message } from "../protocol/types";
import { refusedPart, textLength, toChat, type ChatMessage } from "./chat-content";
import {
  refuse,
  type AgentExecutor,
  type ExecutionOutcome,
  type ExecutionRequest,
  type ExecutorRefusal,
  type Readiness,
} from "./executor";
import { readSse } from "../sse";

export interface OpenAiExecutorOptions {
  /** Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1 (Ollama). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  systemPrompt?: string;
  temperature?: number;
  maxTokens?: number;
  /** Ask for a token stream (default true); servers that answer with plain JSON work too. */
  stream?: boolean;
  /** Earlier turns sent along, newest kept first, within this many characters (default 24,000). */
  historyChars?: number;
  /** Connection attempts before giving up, while no token has arrived yet (default 3). */
  connectAttempts?: number;
  /** First retry delay, doubled each time (default 250 ms). */
  retryBaseMs?: number;
  /** Skills that use another model, prompt or temperature; a message picks one with metadata.skill. */
  skills?: Record<string, { model?: string; systemPrompt?: string; temperature?: number }>;
}

export const DEFAULT_MODEL_URL = "http://127.0.0.1:11434/v1";
export const DEFAULT_MODEL = "llama3.2";

/**
 * Bridges a task to a local model server that speaks the OpenAI chat-completions API (Ollama, llama.cpp,
 * vLLM, LM Studio). The conversation of the task's context goes along as chat history, bounded so that a
 * coordinator's context cannot grow without limit; the answer streams back token by token as artifact
 * chunks. Failures end the task FAILED with a message naming the endpoint, because the person reading it is
 * usually on another machine and needs to know which server to look at.
 */
export class OpenAiCompatibleExecutor implements AgentExecutor {
  readonly kind = "openai";
  /** A chat completion has no side effects to repeat: an interrupted one is simply asked again. */
  readonly onRestart = "rerun";
  private readonly endpoint: string;

  constructor(private readonly options: OpenAiExecutorOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  }

  /**
   * Text and data parts become prompt text, text files too, and images (png, jpeg, gif, webp) go to the model
   * as image_url parts; other files, and files by URL, are refused before a task exists.
   */
  check(message: Message): ExecutorRefusal | undefined {
    const skill = skillOf(message);
    if (skill !== undefined && !this.options.skills?.[skill])
      return refuse(
        "invalid",
        `unknown skill '${skill}' in message.metadata.skill; this agent has: ${Object.keys(this.options.skills ?? {}).join(", ") || "no skills with their own model"}`,
      );
    const refused = refusedPart(message);
    return refused === undefined ? undefined : refuse("content-type", refused);
  }

  async ready(signal: AbortSignal): Promise<Readiness> {
    const url = `${this.options.baseUrl.replace(/\/+$/, "")}/models`;
    try {
      const res = await fetch(url, { headers: this.headers(), signal });
      if (res.status === 401 || res.status === 403)
        return {
          ready: false,
          detail: `${url} refused the API key (HTTP ${res.status}); set OPENAI_API_KEY or --model-api-key-file (tasks wait in auth-required meanwhile)`,
        };
      return res.ok
        ? { ready: true, detail: `${url} answered ${res.status}` }
        : { ready: false, detail: `${url} answered HTTP ${res.status}` };
    } catch (err) {
      return { ready: false, detail: `${url} is unreachable: ${describe(err)}` };
    }
  }

  async execute(request: ExecutionRequest): Promise<ExecutionOutcome> {
    const stream = this.options.stream !== false;
    const skill = this.options.skills?.[skillOf(request.message) ?? ""] ?? {};
    const temperature = skill.temperature ?? this.options.temperature;
    const model = skill.model ?? this.options.model;
    const { messages, images } = await this.chatMessages(request, skill.systemPrompt ?? this.options.systemPrompt);
    const body = JSON.stringify({
      model,
      messages,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(this.options.maxTokens !== undefined ? { max_tokens: this.options.maxTokens } : {}),
    });
    const response = await this.connect(body, request.signal);
    if ("state" in response) return response;
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      if (response.status === 401 || response.status === 403) return this.refusedKey(response.status, text);
      // The usual reason a model refuses a request with pictures: it cannot see them. Say so.
      const why =
        images > 0 && response.status >= 400 && response.status < 500
          ? ` (the task carried ${images} image${images > 1 ? "s" : ""}: does model '${model}' take images? use a vision model, e.g. in a skill)`
          : "";
      return {
        state: "TASK_STATE_FAILED",
        message: `model endpoint ${this.endpoint} answered HTTP ${response.status}: ${text.slice(0, 300)}${why}`,
      };
    }
    const artifactId = `${request.taskId}-answer`;
    if (!(response.headers.get("content-type") ?? "").includes("text/event-stream"))
      return this.whole(request, response, artifactId);

    let chars = 0;
    let usage: unknown;
    try {
      for await (const data of readSse(response.body as ReadableStream<Uint8Array>)) {
        if (data === "[DONE]") break;
        const chunk = JSON.parse(data) as {
          choices?: { delta?: { content?: string | null } }[];
          usage?: unknown;
          error?: { message?: string };
        };
        if (chunk.error) throw new Error(chunk.error.message ?? "the model reported an error");
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices?.[0]?.delta?.content;
        if (typeof delta === "string" && delta !== "") {
          request.events.artifact({ artifactId, name: "answer", parts: [{ text: delta }] }, { append: chars > 0 });
          chars += delta.length;
        }
      }
    } catch (err) {
      if (request.signal.aborted) return { state: "TASK_STATE_CANCELED", message: "canceled" };
      return {
        state: "TASK_STATE_FAILED",
        message: `model endpoint ${this.endpoint} broke off its answer after ${chars} characters: ${describe(err)}`,
        metadata: usage ? { usage } : undefined,
      };
    }
    // The last delta cannot be known until the stream ends; close the artifact with an empty final chunk.
    request.events.artifact(
      { artifactId, name: "answer", parts: [{ text: "" }] },
      { append: chars > 0, lastChunk: true },
    );
    return { state: "TASK_STATE_COMPLETED", metadata: usage ? { usage } : undefined };
  }

  /**
   * POSTs the request, retrying connection failures with backoff: a model server that is restarting gets a
   * moment. Once an answer has started nothing is retried (the tokens already went out).
   */
  private async connect(body: string, signal: AbortSignal): Promise<Response | ExecutionOutcome> {
    const attempts = this.options.connectAttempts ?? 3;
    let delay = this.options.retryBaseMs ?? 250;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetch(this.endpoint, { method: "POST", headers: this.headers(), body, signal });
      } catch (err) {
        if (signal.aborted) return { state: "TASK_STATE_CANCELED", message: "canceled" };
        if (attempt >= attempts)
          return {
            state: "TASK_STATE_FAILED",
            message: `model endpoint ${this.endpoint} is unreachable after ${attempts} attempts: ${describe(err)}`,
          };
        const aborted = await sleep(delay, signal);
        if (aborted) return { state: "TASK_STATE_CANCELED", message: "canceled" };
        delay *= 2;
      }
    }
  }

  /**
   * The model endpoint refused this node's API key: AUTH_REQUIRED (see src/tasks/auth-retry.ts), saying who
   * can fix it. Only the error's type and code are quoted: OpenAI's message repeats part of the key.
   */
  private refusedKey(status: number, body: string): ExecutionOutcome {
    let code = "";
    try {
      const e = (JSON.parse(body) as { error?: { code?: unknown; type?: unknown } }).error;
      code = [e?.type, e?.code].filter((x) => typeof x === "string" && x).join(", ");
    } catch {
      // not OpenAI's error shape: the status says enough
    }
    // 401: the key (missing or wrong); 403: a key the endpoint knows but does not let do this (its code says why).
    const key = !this.options.apiKey
      ? "wants an API key, and this node has none"
      : status === 403
        ? "does not allow this node's API key to do this"
        : "refused this node's API key";
    return {
      state: "TASK_STATE_AUTH_REQUIRED",
      message:
        `model endpoint ${this.endpoint} ${key} (HTTP ${status}${code ? `: ${code}` : ""}). ` +
        "The node's operator must set a valid key (the model_api_key_file, then SIGHUP; or OPENAI_API_KEY and a restart); " +
        "then send any message to this task to run it again, or cancel it.",
    };
  }

  /** A non-streaming answer: one artifact with the whole text. */
  private async whole(request: ExecutionRequest, response: Response, artifactId: string): Promise<ExecutionOutcome> {
    const text = await response.text().catch(() => "");
    let answer: string | undefined;
    let usage: unknown;
    try {
      const json = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[]; usage?: unknown };
      const content = json.choices?.[0]?.message?.content;
      if (typeof content === "string") answer = content;
      usage = json.usage;
    } catch {
      // reported below as an unreadable answer
    }
    if (answer === undefined)
      return {
        state: "TASK_STATE_FAILED",
        message: `model endpoint ${this.endpoint} sent an answer without choices[0].message.content: ${text.slice(0, 200)}`,
      };
    request.events.artifact({ artifactId, name: "answer", parts: [{ text: answer }] }, { lastChunk: true });
    return { state: "TASK_STATE_COMPLETED", metadata: usage ? { usage } : undefined };
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { "content-type": "application/json" };
    if (this.options.apiKey) h.authorization = `Bearer ${this.options.apiKey}`;
    return h;
  }

  /** System prompt, then as many of the context's latest turns as fit the budget, then this message. */
  private async chatMessages(
    request: ExecutionRequest,
    systemPrompt: string | undefined,
  ): Promise<{ messages: ChatMessage[]; images: number }> {
    const { message: current, images } = toChat(request.message, true);
    let budget = (this.options.historyChars ?? 24_000) - textLength(current);
    const earlier: ChatMessage[] = [];
    const history = await request.history();
    for (let i = history.length - 1; i >= 0 && budget > 0; i--) {
      if (history[i].messageId === request.message.messageId) continue;
      const m = toChat(history[i], false).message;
      if (textLength(m) > budget) break; // oldest turns go first
      budget -= textLength(m);
      earlier.unshift(m);
    }
    return {
      messages: [...(systemPrompt ? [{ role: "system" as const, content: systemPrompt }] : []), ...earlier, current],
      images,
    };
  }
}

/** The skill a message asks for (message.metadata.skill), if any. */
function skillOf(m: Message): string | undefined {
  const s = m.metadata?.skill;
  return typeof s === "string" && s !== "" ? s : undefined;
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ? `${e.code} (${e.message ?? ""})`.replace(" ()", "") : (e.message ?? String(err));
}

/** Waits, unless aborted first; resolves true when aborted. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(false);
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve(true);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
