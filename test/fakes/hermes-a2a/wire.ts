/**
 * Twin of plugins/platforms/a2a/protocol.py (NousResearch/hermes-agent @ 00067189dfecf833d4d009c2dd977ae85cf800e0):
 * the plugin's wire shapes, shared by the twin's server and client. See ./index.ts for the whole twin.
 */
import { pyDumps } from "./py-json";

export const PROTOCOL_VERSION = "1.0";

export const STATE = {
  SUBMITTED: "TASK_STATE_SUBMITTED",
  WORKING: "TASK_STATE_WORKING",
  INPUT_REQUIRED: "TASK_STATE_INPUT_REQUIRED",
  COMPLETED: "TASK_STATE_COMPLETED",
  FAILED: "TASK_STATE_FAILED",
  CANCELED: "TASK_STATE_CANCELED",
  REJECTED: "TASK_STATE_REJECTED",
} as const;

/** INPUT_REQUIRED is not among them: the plugin's client keeps reading a stream past it (see client.ts). */
export const TERMINAL_STATES = new Set<string>([STATE.COMPLETED, STATE.FAILED, STATE.CANCELED, STATE.REJECTED]);

export const INPUT_REQUIRED_MARKER = "[INPUT_REQUIRED]";

export const ERR = {
  PARSE: -32700,
  INVALID_PARAMS: -32602,
  METHOD_NOT_FOUND: -32601,
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  UNAUTHORIZED: -32050,
  RATE_LIMITED: -32051,
  UNTRUSTED_PEER: -32052,
} as const;

type Json = Record<string, unknown>;

/** `datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"`. */
export function nowIso(): string {
  return new Date().toISOString();
}

const hex = (n: number) => crypto.randomUUID().replaceAll("-", "").slice(0, n);
export const newTaskId = () => `task-${hex(16)}`;
export const newContextId = () => `ctx-${hex(16)}`;
/** `uuid.uuid4().hex`. */
export const uuidHex = () => crypto.randomUUID().replaceAll("-", "");

export function buildAgentCard(o: {
  name: string;
  url: string;
  description: string;
  skills: Json[];
  streaming: boolean;
  pushNotifications: boolean;
  authRequired: boolean;
}): Json {
  const card: Json = {
    name: o.name,
    description: o.description,
    url: o.url, // "convenience for pre-1.0 clients; canonical is supportedInterfaces"
    version: "1.0.0",
    provider: { organization: "Hermes Agent", url: o.url },
    supportedInterfaces: [{ url: o.url, protocolBinding: "JSONRPC", protocolVersion: PROTOCOL_VERSION }],
    capabilities: {
      streaming: o.streaming,
      pushNotifications: o.pushNotifications,
      stateTransitionHistory: false,
      extendedAgentCard: false,
    },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: o.skills,
  };
  if (o.authRequired) {
    // The v0.3 forms, in a card that is otherwise v1.0.
    card.securitySchemes = { bearer: { type: "http", scheme: "bearer" } };
    card.security = [{ bearer: [] }];
  }
  return card;
}

/** `skills_from_toolsets([])`: with no tool registry and nothing configured, one general skill. */
export function skillsFromToolsets(toolsets: string[]): Json[] {
  const names = [...new Set(toolsets)].sort();
  const skills = names.map((name) => ({
    id: `toolset.${name}`,
    name,
    description: `Hermes '${name}' capabilities`,
    tags: [name],
  }));
  return skills.length
    ? skills
    : [{ id: "general", name: "general", description: "General-purpose conversational agent", tags: ["general"] }];
}

export const jsonrpcResult = (id: unknown, result: unknown): Json => ({ jsonrpc: "2.0", id: id ?? null, result });
export const jsonrpcError = (id: unknown, code: number, message: string): Json => ({
  jsonrpc: "2.0",
  id: id ?? null,
  error: { code, message },
});

/** v1.0 SendMessageResponse: `{task}` when it looks like a task (status and id), else `{message}`. */
export function sendMessageResponse(payload: Json): Json {
  return payload.status && payload.id ? { task: payload } : { message: payload };
}

export function unwrapSendMessageResponse(result: unknown): unknown {
  if (result && typeof result === "object") {
    const r = result as Json;
    if (r.task && typeof r.task === "object" && !Array.isArray(r.task)) return r.task;
    if (r.message && typeof r.message === "object" && !Array.isArray(r.message)) return r.message;
  }
  return result;
}

export const textPart = (text: string): Json => ({ text, mediaType: "text/plain" });

export function textMessage(role: string, text: string, contextId = ""): Json {
  const msg: Json = { role, parts: [textPart(text)], messageId: uuidHex() };
  if (contextId) msg.contextId = contextId;
  return msg;
}

function fileNote(name: string, body: string, type: string): string {
  return `${name ? `[file: ${name}]` : "[file]"} ${body}${type ? ` (${type})` : ""}`;
}

const str = (v: unknown) => (typeof v === "string" ? v : "");
/** Python's truthiness for the `x or y` chains of extract_text. */
const or = (...vs: unknown[]) => str(vs.find((v) => typeof v === "string" && v !== "") ?? "");

/** `extract_text`: the text of a Message (or params holding one, or an artifact): parts joined by "\n", stripped. */
export function extractText(messageOrParams: Json): string {
  const msg = "message" in messageOrParams ? messageOrParams.message : messageOrParams;
  const parts =
    msg && typeof msg === "object" && !Array.isArray(msg) && Array.isArray((msg as Json).parts)
      ? ((msg as Json).parts as unknown[])
      : [];
  const chunks: string[] = [];
  for (const p of parts) {
    if (!p || typeof p !== "object" || Array.isArray(p)) continue;
    const part = p as Json;
    if (typeof part.text === "string") chunks.push(part.text);
    else if (typeof part.url === "string" && part.url)
      chunks.push(fileNote(or(part.filename, part.name), part.url, or(part.mediaType, part.mimeType)));
    else if (part.file && typeof part.file === "object" && typeof (part.file as Json).fileWithUri === "string") {
      const f = part.file as Json;
      chunks.push(fileNote(or(f.name), f.fileWithUri as string, or(f.mimeType)));
    } else if (typeof part.raw === "string")
      chunks.push(fileNote(or(part.filename), `${part.raw.length} bytes base64-encoded`, or(part.mediaType)));
    else if (part.data !== undefined && part.data !== null)
      chunks.push(
        `[data (${or(part.mediaType) || "application/json"})]\n${pyDumps(part.data, { ensureAscii: false })}`,
      );
  }
  return chunks.join("\n").trim();
}

/** v1.0 puts contextId inside the Message; a legacy top-level one is taken too. */
export function extractContextId(params: Json): string {
  const msg = params.message;
  const inside = msg && typeof msg === "object" && !Array.isArray(msg) ? (msg as Json).contextId : undefined;
  return (inside ? String(inside) : "") || (params.contextId ? String(params.contextId) : "");
}

/**
 * `build_task`: no history, no createdAt; a status message only with text; an artifact only when COMPLETED with text.
 */
export function buildTask(taskId: string, contextId: string, state: string, agentText = ""): Json {
  const status: Json = { state, timestamp: nowIso() };
  const task: Json = { id: taskId, contextId, status };
  if (agentText) {
    status.message = textMessage("ROLE_AGENT", agentText, contextId);
    if (state === STATE.COMPLETED) task.artifacts = [{ artifactId: uuidHex(), parts: [textPart(agentText)] }];
  }
  return task;
}

export function statusUpdate(taskId: string, contextId: string, state: string, text = ""): Json {
  const status: Json = { state, timestamp: nowIso() };
  if (text) status.message = textMessage("ROLE_AGENT", text, contextId);
  return { statusUpdate: { taskId, contextId, status } };
}

export function artifactUpdate(taskId: string, contextId: string, text: string): Json {
  return { artifactUpdate: { taskId, contextId, artifact: { artifactId: uuidHex(), parts: [textPart(text)] } } };
}

/** One StreamResponse as an SSE data frame, wrapped as a JSON-RPC response (`req_id` None: bare). */
export function sseData(payload: Json, reqId: unknown): string {
  const envelope = reqId !== null && reqId !== undefined ? jsonrpcResult(reqId, payload) : payload;
  return `data: ${pyDumps(envelope, { ensureAscii: false })}\n\n`;
}

/** The stream's end, as an SSE comment. */
export const SSE_DONE = ": done\n\n";
