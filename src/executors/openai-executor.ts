import type { Message } from "../protocol/types";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "./executor";
import { messageText } from "./executor";

export interface OpenAiExecutorOptions {
  /** Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1 (Ollama). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  systemPrompt?: string;
}

export const DEFAULT_MODEL_URL = "http://127.0.0.1:11434/v1";
export const DEFAULT_MODEL = "llama3.2";

interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/**
 * Bridges a task to a local model server that speaks the OpenAI chat-completions API (Ollama, llama.cpp,
 * vLLM, LM Studio). The conversation of the task's context goes along as chat history; the answer comes back
 * as the task's one artifact. Failures end the task FAILED with a message that names the endpoint, because
 * the person reading it is usually on another machine and needs to know which server to look at.
 */
export class OpenAiCompatibleExecutor implements AgentExecutor {
  readonly kind = "openai";
  private readonly endpoint: string;

  constructor(private readonly options: OpenAiExecutorOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionOutcome> {
    const body = JSON.stringify({ model: this.options.model, messages: this.chatMessages(request), stream: false });
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let response: Response;
    try {
      response = await fetch(this.endpoint, { method: "POST", headers, body, signal: request.signal });
    } catch (err) {
      if (request.signal.aborted) return { state: "TASK_STATE_CANCELED", message: "canceled" };
      return { state: "TASK_STATE_FAILED", message: `model endpoint ${this.endpoint} is unreachable: ${describe(err)}` };
    }
    const text = await response.text().catch(() => "");
    if (!response.ok) {
      return {
        state: "TASK_STATE_FAILED",
        message: `model endpoint ${this.endpoint} answered HTTP ${response.status}: ${text.slice(0, 300)}`,
      };
    }
    let answer: string | undefined;
    let usage: unknown;
    try {
      const json = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[]; usage?: unknown };
      const content = json.choices?.[0]?.message?.content;
      if (typeof content === "string") answer = content;
      usage = json.usage;
    } catch {
      // fall through: reported below as an unreadable answer
    }
    if (answer === undefined) {
      return {
        state: "TASK_STATE_FAILED",
        message: `model endpoint ${this.endpoint} sent an answer without choices[0].message.content: ${text.slice(0, 200)}`,
      };
    }
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [{ artifactId: `${request.taskId}-answer`, name: "answer", parts: [{ text: answer }] }],
      metadata: usage ? { usage } : undefined,
    };
  }

  private chatMessages(request: ExecutionRequest): ChatMessage[] {
    const out: ChatMessage[] = [];
    if (this.options.systemPrompt) out.push({ role: "system", content: this.options.systemPrompt });
    for (const m of request.history()) if (m.messageId !== request.message.messageId) out.push(toChat(m));
    out.push(toChat(request.message));
    return out;
  }
}

function toChat(m: Message): ChatMessage {
  return { role: m.role === "ROLE_AGENT" ? "assistant" : "user", content: messageText(m) };
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ? `${e.code} (${e.message ?? ""})`.replace(" ()", "") : (e.message ?? String(err));
}
