import { A2AError } from "../errors";
import type {
  AgentCard,
  AgentSkill,
  Artifact,
  Message,
  Part,
  SendMessageConfiguration,
  SendMessageParams,
  SendMessageResult,
  StreamResponse,
  Task,
  TaskArtifactUpdateEvent,
  TaskPushNotificationConfig,
  TaskState,
  TaskStatus,
  TaskStatusUpdateEvent,
} from "../types";
import { isSettled } from "../types";
import * as validate from "../validate";

/**
 * Pure conversions between a2a-node's v1.0 shapes and the A2A v0.3 wire shapes (the JSON-RPC flavour spoken by
 * peers that send no A2A-Version header), plus the pre-0.2 Hermes `tasks/send` record. The v0.3 shapes follow
 * the `@a2a-js/sdk` 1.3.0 compat layer (dist/compat/v0_3): `kind` discriminators, lowercase states, `file` parts.
 *
 * `fromV03*` take what a client sent (unknown JSON) and throw -32602 InvalidParams naming the exact field;
 * `toV03*` take our own, already valid, v1.0 objects.
 */

// ---------------------------------------------------------------------------------------------------------------
// v0.3 shapes
// ---------------------------------------------------------------------------------------------------------------

export type V03TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected"
  | "auth-required"
  | "unknown";

type Metadata = Record<string, unknown>;

export interface V03TextPart {
  kind: "text";
  text: string;
  metadata?: Metadata;
}
export interface V03FileWithBytes {
  bytes: string;
  name?: string;
  mimeType?: string;
}
export interface V03FileWithUri {
  uri: string;
  name?: string;
  mimeType?: string;
}
export interface V03FilePart {
  kind: "file";
  file: V03FileWithBytes | V03FileWithUri;
  metadata?: Metadata;
}
export interface V03DataPart {
  kind: "data";
  data: Metadata;
  metadata?: Metadata;
}
export type V03Part = V03TextPart | V03FilePart | V03DataPart;

export interface V03Message {
  kind: "message";
  messageId: string;
  role: "user" | "agent";
  parts: V03Part[];
  contextId?: string;
  taskId?: string;
  metadata?: Metadata;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface V03TaskStatus {
  state: V03TaskState;
  message?: V03Message;
  timestamp?: string;
}

export interface V03Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: V03Part[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface V03Task {
  kind: "task";
  id: string;
  contextId: string;
  status: V03TaskStatus;
  history?: V03Message[];
  artifacts?: V03Artifact[];
  metadata?: Metadata;
}

export interface V03TaskStatusUpdateEvent {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: V03TaskStatus;
  /** True on the last event of a stream: the task reached a terminal or interrupted state. */
  final: boolean;
  metadata?: Metadata;
}

export interface V03TaskArtifactUpdateEvent {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: V03Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
}

/** One result of `message/stream` / `tasks/resubscribe`. */
export type V03Event = V03Task | V03Message | V03TaskStatusUpdateEvent | V03TaskArtifactUpdateEvent;

export interface V03PushNotificationAuthenticationInfo {
  schemes: string[];
  credentials?: string;
}
export interface V03PushNotificationConfig {
  id?: string;
  url: string;
  token?: string;
  authentication?: V03PushNotificationAuthenticationInfo;
}
export interface V03TaskPushNotificationConfig {
  taskId: string;
  pushNotificationConfig: V03PushNotificationConfig;
}

export interface V03AgentCard {
  name: string;
  description: string;
  version: string;
  protocolVersion: string;
  url: string;
  preferredTransport: string;
  additionalInterfaces?: { url: string; transport: string }[];
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  capabilities: { streaming?: boolean; pushNotifications?: boolean; extensions?: unknown[] };
  securitySchemes?: Record<string, Metadata>;
  security?: Record<string, string[]>[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[]; // unchanged between v0.3 and v1.0
  supportsAuthenticatedExtendedCard?: boolean;
}

// ---------------------------------------------------------------------------------------------------------------
// Checks (the style of ../validate.ts: name the exact field, throw -32602)
// ---------------------------------------------------------------------------------------------------------------

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const bad = (msg: string) => A2AError.invalidParams(msg);
const absent = (v: unknown) => v === undefined || v === null;

function optString(o: Obj, key: string, where: string): string | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "string") throw bad(`${where}.${key} must be a string`);
  return v;
}

function nonEmptyString(o: Obj, key: string, where: string): string {
  const v = o[key];
  if (typeof v !== "string" || v.length === 0) throw bad(`${where}.${key} must be a non-empty string`);
  return v;
}

function optMetadata(o: Obj, key: string, where: string): Metadata | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (!isObj(v)) throw bad(`${where}.${key} must be an object`);
  return v;
}

function optStringArray(o: Obj, key: string, where: string): string[] | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw bad(`${where}.${key} must be an array of strings`);
  return v as string[];
}

function optBool(o: Obj, key: string, where: string): boolean | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "boolean") throw bad(`${where}.${key} must be true or false`);
  return v;
}

function optWholeNumber(o: Obj, key: string, where: string): number | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw bad(`${where}.${key} must be a whole number from 0 up`);
  return v;
}

function checkKind(o: Obj, kind: string, where: string): void {
  if (o.kind !== undefined && o.kind !== kind) throw bad(`${where}.kind must be "${kind}"`);
}

function httpUrl(v: string, where: string): string {
  try {
    const u = new URL(v);
    if (u.protocol === "https:" || u.protocol === "http:") return v;
  } catch {
    // fall through
  }
  throw bad(`${where} must be an http(s) URL`);
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Drops undefined members, so converted objects serialize and compare like the wire JSON. */
function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

const nonEmpty = (s: string | undefined) => (s === undefined || s === "" ? undefined : s);
const nonEmptyList = <T>(a: T[] | undefined) => (a === undefined || a.length === 0 ? undefined : [...a]);

// ---------------------------------------------------------------------------------------------------------------
// States and roles
// ---------------------------------------------------------------------------------------------------------------

const STATE_TO_V03: Record<TaskState, V03TaskState> = {
  TASK_STATE_SUBMITTED: "submitted",
  TASK_STATE_WORKING: "working",
  TASK_STATE_INPUT_REQUIRED: "input-required",
  TASK_STATE_AUTH_REQUIRED: "auth-required",
  TASK_STATE_COMPLETED: "completed",
  TASK_STATE_CANCELED: "canceled",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_REJECTED: "rejected",
};
const STATE_FROM_V03 = new Map<string, TaskState>(Object.entries(STATE_TO_V03).map(([v1, v03]) => [v03, v1 as TaskState]));

export function toV03State(state: TaskState): V03TaskState {
  return STATE_TO_V03[state] ?? "unknown";
}

/** v0.3's "unknown" has no v1.0 counterpart here, so it is refused like any other unexpected value. */
export function fromV03State(state: unknown, where = "params.status.state"): TaskState {
  const s = typeof state === "string" ? STATE_FROM_V03.get(state) : undefined;
  if (!s) throw bad(`${where} must be one of ${[...STATE_FROM_V03.keys()].join(", ")}`);
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Parts
// ---------------------------------------------------------------------------------------------------------------

/**
 * v0.3 DataPart.data must be an object; a v1.0 data part may hold any JSON value. Like the SDK, a non-object
 * value travels as `{value: ...}` with this metadata flag, and the flag is undone on the way back.
 */
export const DATA_PART_COMPAT_FLAG = "data_part_compat";

export function toV03Part(p: Part): V03Part {
  const metadata = p.metadata && { ...p.metadata };
  if (p.text !== undefined) return compact<V03TextPart>({ kind: "text", text: p.text, metadata });
  if (p.raw !== undefined || p.url !== undefined) {
    const file: V03FileWithBytes | V03FileWithUri =
      p.raw !== undefined ? { bytes: p.raw } : { uri: p.url as string };
    if (nonEmpty(p.filename)) file.name = p.filename;
    if (nonEmpty(p.mediaType)) file.mimeType = p.mediaType;
    return compact<V03FilePart>({ kind: "file", file, metadata });
  }
  if (p.data !== undefined) {
    if (isObj(p.data)) return compact<V03DataPart>({ kind: "data", data: p.data, metadata });
    return { kind: "data", data: { value: p.data }, metadata: { ...metadata, [DATA_PART_COMPAT_FLAG]: true } };
  }
  throw A2AError.internal("cannot express a part without text, raw, url or data in A2A v0.3");
}

export function fromV03Part(p: unknown, where: string): Part {
  if (!isObj(p)) throw bad(`${where} must be an object`);
  const metadata = optMetadata(p, "metadata", where);
  switch (p.kind) {
    case "text":
      if (typeof p.text !== "string") throw bad(`${where}.text must be a string`);
      return compact<Part>({ text: p.text, metadata: metadata && { ...metadata } });
    case "file": {
      const f = p.file;
      if (!isObj(f)) throw bad(`${where}.file must be an object with bytes or uri`);
      const hasBytes = !absent(f.bytes);
      const hasUri = !absent(f.uri);
      if (hasBytes === hasUri) throw bad(`${where}.file must have exactly one of bytes or uri`);
      const out: Part = {};
      if (hasBytes) {
        if (typeof f.bytes !== "string" || !BASE64.test(f.bytes)) throw bad(`${where}.file.bytes must be base64 text`);
        out.raw = f.bytes;
      } else {
        if (typeof f.uri !== "string" || f.uri.length === 0) throw bad(`${where}.file.uri must be a non-empty string`);
        out.url = f.uri;
      }
      const name = optString(f, "name", `${where}.file`);
      const mimeType = optString(f, "mimeType", `${where}.file`);
      if (name) out.filename = name;
      if (mimeType) out.mediaType = mimeType;
      if (metadata) out.metadata = { ...metadata };
      return out;
    }
    case "data": {
      if (!isObj(p.data)) throw bad(`${where}.data must be an object`);
      let data: unknown = p.data;
      let md = metadata && { ...metadata };
      if (md && md[DATA_PART_COMPAT_FLAG] === true) {
        if ("value" in p.data) data = p.data.value;
        delete md[DATA_PART_COMPAT_FLAG];
        if (Object.keys(md).length === 0) md = undefined;
      }
      return compact<Part>({ data, metadata: md });
    }
    default:
      throw bad(`${where}.kind must be "text", "file" or "data"`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages, artifacts, tasks
// ---------------------------------------------------------------------------------------------------------------

export function toV03Message(m: Message): V03Message {
  return compact<V03Message>({
    kind: "message",
    messageId: m.messageId,
    role: m.role === "ROLE_USER" ? "user" : "agent",
    parts: m.parts.map(toV03Part),
    contextId: nonEmpty(m.contextId),
    taskId: nonEmpty(m.taskId),
    metadata: m.metadata && { ...m.metadata },
    extensions: nonEmptyList(m.extensions),
    referenceTaskIds: nonEmptyList(m.referenceTaskIds),
  });
}

/** A v0.3 message from a client, as a v1.0 Message that has also passed the v1.0 checks. */
export function fromV03Message(m: unknown, where = "params.message"): Message {
  if (!isObj(m)) throw bad(`${where} is required and must be an object`);
  checkKind(m, "message", where);
  const messageId = nonEmptyString(m, "messageId", where);
  if (m.role !== "user" && m.role !== "agent") throw bad(`${where}.role must be "user" or "agent"`);
  if (!Array.isArray(m.parts) || m.parts.length === 0) throw bad(`${where}.parts must be a non-empty array`);
  const parts = m.parts.map((p, i) => fromV03Part(p, `${where}.parts[${i}]`));
  const metadata = optMetadata(m, "metadata", where);
  const out = compact<Message>({
    messageId,
    role: m.role === "user" ? "ROLE_USER" : "ROLE_AGENT",
    parts,
    contextId: nonEmpty(optString(m, "contextId", where)),
    taskId: nonEmpty(optString(m, "taskId", where)),
    metadata: metadata && { ...metadata },
    extensions: nonEmptyList(optStringArray(m, "extensions", where)),
    referenceTaskIds: nonEmptyList(optStringArray(m, "referenceTaskIds", where)),
  });
  return validate.message(out, where);
}

export function toV03Artifact(a: Artifact): V03Artifact {
  return compact<V03Artifact>({
    artifactId: a.artifactId,
    name: nonEmpty(a.name),
    description: nonEmpty(a.description),
    parts: a.parts.map(toV03Part),
    metadata: a.metadata && { ...a.metadata },
    extensions: nonEmptyList(a.extensions),
  });
}

export function fromV03Artifact(a: unknown, where = "artifact"): Artifact {
  if (!isObj(a)) throw bad(`${where} must be an object`);
  const artifactId = nonEmptyString(a, "artifactId", where);
  if (!Array.isArray(a.parts)) throw bad(`${where}.parts must be an array`);
  const metadata = optMetadata(a, "metadata", where);
  return compact<Artifact>({
    artifactId,
    name: nonEmpty(optString(a, "name", where)),
    description: nonEmpty(optString(a, "description", where)),
    parts: a.parts.map((p, i) => fromV03Part(p, `${where}.parts[${i}]`)),
    metadata: metadata && { ...metadata },
    extensions: nonEmptyList(optStringArray(a, "extensions", where)),
  });
}

export function toV03TaskStatus(s: TaskStatus): V03TaskStatus {
  return compact<V03TaskStatus>({
    state: toV03State(s.state),
    message: s.message && toV03Message(s.message),
    timestamp: nonEmpty(s.timestamp),
  });
}

export function fromV03TaskStatus(s: unknown, where = "status"): TaskStatus {
  if (!isObj(s)) throw bad(`${where} must be an object`);
  return compact<TaskStatus>({
    state: fromV03State(s.state, `${where}.state`),
    message: absent(s.message) ? undefined : fromV03Message(s.message, `${where}.message`),
    timestamp: nonEmpty(optString(s, "timestamp", where)),
  });
}

export function toV03Task(t: Task): V03Task {
  return compact<V03Task>({
    kind: "task",
    id: t.id,
    contextId: t.contextId,
    status: toV03TaskStatus(t.status),
    history: t.history && t.history.length > 0 ? t.history.map(toV03Message) : undefined,
    artifacts: t.artifacts && t.artifacts.length > 0 ? t.artifacts.map(toV03Artifact) : undefined,
    metadata: t.metadata && { ...t.metadata },
  });
}

export function fromV03Task(t: unknown, where = "task"): Task {
  if (!isObj(t)) throw bad(`${where} must be an object`);
  checkKind(t, "task", where);
  const id = nonEmptyString(t, "id", where);
  const contextId = nonEmptyString(t, "contextId", where);
  if (!absent(t.history) && !Array.isArray(t.history)) throw bad(`${where}.history must be an array`);
  if (!absent(t.artifacts) && !Array.isArray(t.artifacts)) throw bad(`${where}.artifacts must be an array`);
  const history = (t.history as unknown[] | undefined) ?? [];
  const artifacts = (t.artifacts as unknown[] | undefined) ?? [];
  const metadata = optMetadata(t, "metadata", where);
  return compact<Task>({
    id,
    contextId,
    status: fromV03TaskStatus(t.status, `${where}.status`),
    history: history.length > 0 ? history.map((m, i) => fromV03Message(m, `${where}.history[${i}]`)) : undefined,
    artifacts: artifacts.length > 0 ? artifacts.map((a, i) => fromV03Artifact(a, `${where}.artifacts[${i}]`)) : undefined,
    metadata: metadata && { ...metadata },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Stream events
// ---------------------------------------------------------------------------------------------------------------

/** `final` is set once the task is terminal or interrupted: the point where our streams close. */
export function toV03StatusUpdate(e: TaskStatusUpdateEvent): V03TaskStatusUpdateEvent {
  return compact<V03TaskStatusUpdateEvent>({
    kind: "status-update",
    taskId: e.taskId,
    contextId: e.contextId,
    status: toV03TaskStatus(e.status),
    final: isSettled(e.status.state),
    metadata: e.metadata && { ...e.metadata },
  });
}

export function fromV03StatusUpdate(e: unknown, where = "event"): TaskStatusUpdateEvent {
  if (!isObj(e)) throw bad(`${where} must be an object`);
  checkKind(e, "status-update", where);
  const metadata = optMetadata(e, "metadata", where);
  return compact<TaskStatusUpdateEvent>({
    taskId: nonEmptyString(e, "taskId", where),
    contextId: nonEmptyString(e, "contextId", where),
    status: fromV03TaskStatus(e.status, `${where}.status`),
    metadata: metadata && { ...metadata },
  });
}

export function toV03ArtifactUpdate(e: TaskArtifactUpdateEvent): V03TaskArtifactUpdateEvent {
  return compact<V03TaskArtifactUpdateEvent>({
    kind: "artifact-update",
    taskId: e.taskId,
    contextId: e.contextId,
    artifact: toV03Artifact(e.artifact),
    append: e.append,
    lastChunk: e.lastChunk,
    metadata: e.metadata && { ...e.metadata },
  });
}

export function fromV03ArtifactUpdate(e: unknown, where = "event"): TaskArtifactUpdateEvent {
  if (!isObj(e)) throw bad(`${where} must be an object`);
  checkKind(e, "artifact-update", where);
  const metadata = optMetadata(e, "metadata", where);
  return compact<TaskArtifactUpdateEvent>({
    taskId: nonEmptyString(e, "taskId", where),
    contextId: nonEmptyString(e, "contextId", where),
    artifact: fromV03Artifact(e.artifact, `${where}.artifact`),
    append: optBool(e, "append", where),
    lastChunk: optBool(e, "lastChunk", where),
    metadata: metadata && { ...metadata },
  });
}

/** One v1.0 stream item as the v0.3 event object (the JSON-RPC `result` of one SSE line). */
export function toV03Event(r: StreamResponse): V03Event {
  if ("task" in r) return toV03Task(r.task);
  if ("message" in r) return toV03Message(r.message);
  if ("statusUpdate" in r) return toV03StatusUpdate(r.statusUpdate);
  if ("artifactUpdate" in r) return toV03ArtifactUpdate(r.artifactUpdate);
  throw A2AError.internal("a stream item had none of task, message, statusUpdate or artifactUpdate");
}

/** v0.3 `message/send` answers the Task or Message itself (with `kind`), not wrapped in {task}/{message}. */
export function toV03SendResult(r: SendMessageResult): V03Task | V03Message {
  return "task" in r ? toV03Task(r.task) : toV03Message(r.message);
}

// ---------------------------------------------------------------------------------------------------------------
// Push notification configs
// ---------------------------------------------------------------------------------------------------------------

/** A v1.0 push config without the task it belongs to (as inside SendMessageConfiguration). */
export type PushConfigBody = Omit<TaskPushNotificationConfig, "taskId">;

export function toV03PushConfig(c: TaskPushNotificationConfig): V03TaskPushNotificationConfig {
  const inner: V03PushNotificationConfig = { url: c.url };
  if (nonEmpty(c.id)) inner.id = c.id;
  if (nonEmpty(c.token)) inner.token = c.token;
  if (c.authentication) {
    inner.authentication = { schemes: c.authentication.scheme ? [c.authentication.scheme] : [] };
    if (nonEmpty(c.authentication.credentials)) inner.authentication.credentials = c.authentication.credentials;
  }
  return { taskId: c.taskId, pushNotificationConfig: inner };
}

/**
 * A v0.3 PushNotificationConfig (`{id?, url, token?, authentication?: {schemes, credentials?}}`). v1.0 keeps one
 * scheme: the first listed one is the one used, as in the SDK. A missing id is left "" for the handler to assign.
 */
export function fromV03PushNotificationConfig(c: unknown, where: string): PushConfigBody {
  if (!isObj(c)) throw bad(`${where} is required and must be an object`);
  const out: PushConfigBody = { id: optString(c, "id", where) ?? "", url: httpUrl(nonEmptyString(c, "url", where), `${where}.url`) };
  const token = optString(c, "token", where);
  if (token) out.token = token;
  if (!absent(c.authentication)) {
    const a = c.authentication;
    const aw = `${where}.authentication`;
    if (!isObj(a)) throw bad(`${aw} must be an object`);
    const schemes = optStringArray(a, "schemes", aw);
    if (!schemes || schemes.length === 0 || schemes[0] === "") throw bad(`${aw}.schemes must be a non-empty array of scheme names`);
    out.authentication = compact({ scheme: schemes[0], credentials: optString(a, "credentials", aw) });
  }
  return out;
}

/** `tasks/pushNotificationConfig/set` params: `{taskId, pushNotificationConfig}`. */
export function fromV03PushConfig(p: unknown, where = "params"): TaskPushNotificationConfig {
  if (!isObj(p)) throw bad(`${where} must be an object`);
  const taskId = nonEmptyString(p, "taskId", where);
  const body = fromV03PushNotificationConfig(p.pushNotificationConfig, `${where}.pushNotificationConfig`);
  return { id: body.id, taskId, url: body.url, ...(body.token ? { token: body.token } : {}), ...(body.authentication ? { authentication: body.authentication } : {}) };
}

// ---------------------------------------------------------------------------------------------------------------
// message/send params
// ---------------------------------------------------------------------------------------------------------------

/**
 * The v0.3 `blocking` flag as v1.0 `returnImmediately`, exactly as `@a2a-js/sdk` 1.3.0 maps it
 * (dist/compat/v0_3/server/index.js:1074, toCoreSendMessageConfiguration:
 * `returnImmediately: compat.blocking === void 0 ? true : !compat.blocking`): with a `configuration` object,
 * an unset `blocking` means return immediately; with no `configuration` at all the v1.0 default applies
 * (blocking), since the SDK then passes no configuration (dist/server/index.js:3078:
 * `isBlocking = params.configuration?.returnImmediately !== true`).
 */
export function v03ReturnImmediately(blocking: boolean | undefined): boolean {
  return blocking === undefined ? true : !blocking;
}

/** v0.3 MessageSendParams `{message, configuration?, metadata?}` as v1.0 SendMessageParams. */
export function fromV03SendParams(p: unknown): SendMessageParams {
  if (!isObj(p)) throw bad("params must be an object");
  const out: SendMessageParams = { message: fromV03Message(p.message, "params.message") };
  if (!absent(p.configuration)) {
    const c = p.configuration;
    const where = "params.configuration";
    if (!isObj(c)) throw bad(`${where} must be an object`);
    const cfg: SendMessageConfiguration = {
      returnImmediately: v03ReturnImmediately(optBool(c, "blocking", where)),
    };
    const modes = optStringArray(c, "acceptedOutputModes", where);
    if (modes) cfg.acceptedOutputModes = [...modes];
    const historyLength = optWholeNumber(c, "historyLength", where);
    if (historyLength !== undefined) cfg.historyLength = historyLength;
    if (!absent(c.pushNotificationConfig))
      // The task does not exist yet; the handler fills in its id.
      cfg.taskPushNotificationConfig = { ...fromV03PushNotificationConfig(c.pushNotificationConfig, `${where}.pushNotificationConfig`), taskId: "pending" };
    out.configuration = cfg;
  }
  const metadata = optMetadata(p, "metadata", "params");
  if (metadata) out.metadata = { ...metadata };
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Agent card
// ---------------------------------------------------------------------------------------------------------------

export const V03_PROTOCOL_VERSION = "0.3.0";

function toV03SecurityScheme(s: unknown): Metadata | undefined {
  if (!isObj(s)) return undefined;
  const [kind, body] = Object.entries(s)[0] ?? [];
  if (!isObj(body)) return undefined;
  const description = typeof body.description === "string" && body.description ? { description: body.description } : {};
  switch (kind) {
    case "mtlsSecurityScheme":
      return { type: "mutualTLS", ...description };
    case "apiKeySecurityScheme":
      return { type: "apiKey", name: body.name, in: body.location === "cookie" || body.location === "query" ? body.location : "header", ...description };
    case "httpAuthSecurityScheme":
      return compact({ type: "http", scheme: body.scheme, bearerFormat: nonEmpty(body.bearerFormat as string | undefined), ...description });
    case "oauth2SecurityScheme":
      return compact({ type: "oauth2", flows: body.flows ?? {}, oauth2MetadataUrl: nonEmpty(body.oauth2MetadataUrl as string | undefined), ...description });
    case "openIdConnectSecurityScheme":
      return { type: "openIdConnect", openIdConnectUrl: body.openIdConnectUrl, ...description };
    default:
      return undefined;
  }
}

/** The v1.0 card as a v0.3 AgentCard: `url` + `preferredTransport` from the JSON-RPC interface. */
export function toV03AgentCard(card: AgentCard): V03AgentCard {
  const interfaces = card.supportedInterfaces ?? [];
  const primary = interfaces.find((i) => i.protocolBinding === "JSONRPC") ?? interfaces[0];
  if (!primary) throw A2AError.internal("the agent card has no interface to advertise");
  const out: V03AgentCard = {
    name: card.name,
    description: card.description,
    version: card.version,
    protocolVersion: V03_PROTOCOL_VERSION,
    url: primary.url,
    preferredTransport: primary.protocolBinding,
    additionalInterfaces: interfaces.map((i) => ({ url: i.url, transport: i.protocolBinding })),
    capabilities: compact({
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      extensions: nonEmptyList(card.capabilities.extensions),
    }),
    defaultInputModes: [...card.defaultInputModes],
    defaultOutputModes: [...card.defaultOutputModes],
    skills: card.skills.map((s) =>
      compact({
        id: s.id,
        name: s.name,
        description: s.description,
        tags: [...s.tags],
        examples: nonEmptyList(s.examples),
        inputModes: nonEmptyList(s.inputModes),
        outputModes: nonEmptyList(s.outputModes),
      }),
    ),
  };
  if (card.provider) out.provider = { organization: card.provider.organization, url: card.provider.url };
  if (nonEmpty(card.documentationUrl)) out.documentationUrl = card.documentationUrl;
  if (card.capabilities.extendedAgentCard !== undefined) out.supportsAuthenticatedExtendedCard = card.capabilities.extendedAgentCard;
  if (card.securitySchemes) {
    const schemes: Record<string, Metadata> = {};
    for (const [name, s] of Object.entries(card.securitySchemes)) {
      const v = toV03SecurityScheme(s);
      if (v) schemes[name] = v;
    }
    if (Object.keys(schemes).length > 0) out.securitySchemes = schemes;
  }
  if (card.securityRequirements && card.securityRequirements.length > 0) {
    out.security = card.securityRequirements.map((r) => {
      const schemes = isObj(r) && isObj(r.schemes) ? r.schemes : {};
      return Object.fromEntries(
        Object.entries(schemes).map(([name, v]) => [name, isObj(v) && Array.isArray(v.list) ? v.list.map(String) : []]),
      );
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The pre-0.2 Hermes record (`tasks/send`, `tasks/get {taskId}`)
// ---------------------------------------------------------------------------------------------------------------

export interface LegacySendParams {
  task: string;
  requester?: string;
  metadata: Metadata;
  /** A caller-chosen id; reused as the message id so that a retried `tasks/send` lands on the same task. */
  taskId?: string;
}

export interface LegacyTaskRecord {
  taskId: string;
  task: string;
  requester: string | null;
  metadata: Metadata;
  artifacts: { text: string }[];
  status: { state: V03TaskState; message: string; timestamp: string };
}

/** Where a `tasks/send` keeps the record's own fields inside the v1.0 task's metadata. */
export const LEGACY_METADATA_KEY = "hermesLegacy";

export function legacySendParams(p: unknown): LegacySendParams {
  if (!isObj(p)) throw bad("params must be an object");
  if (typeof p.task !== "string" || p.task.trim() === "") throw bad("params.task is required and must be a non-empty string");
  const out: LegacySendParams = {
    task: p.task.trim(),
    metadata: { ...(optMetadata(p, "metadata", "params") ?? {}) },
  };
  const requester = optString(p, "requester", "params");
  if (requester) out.requester = requester;
  const taskId = optString(p, "taskId", "params");
  if (taskId) out.taskId = taskId;
  return out;
}

/**
 * The v1.0 SendMessage a `tasks/send` becomes: one user text message, answered as soon as the task is stored.
 * `requester` is whoever the caller says asked (its own words, kept as said); `peer_cn` is the node's: the name
 * the caller's certificate proves, whatever the caller's metadata says it is.
 */
export function legacyToSendParams(p: LegacySendParams, callerName: string, freshId: () => string): SendMessageParams {
  const requester = p.requester ?? callerName;
  const metadata: Metadata = { ...p.metadata, peer_cn: callerName };
  metadata[LEGACY_METADATA_KEY] = { task: p.task, requester };
  return {
    message: { messageId: p.taskId ?? freshId(), role: "ROLE_USER", parts: [{ text: p.task }] },
    configuration: { returnImmediately: true },
    metadata,
  };
}

const LEGACY_STATUS_TEXT: Record<V03TaskState, string> = {
  submitted: "Task submitted",
  working: "Task is running",
  "input-required": "Task needs more input",
  "auth-required": "Task needs authorization",
  completed: "Task completed",
  canceled: "Task canceled",
  failed: "Task failed",
  rejected: "Task rejected",
  unknown: "Task state unknown",
};

const textOf = (parts: Part[] | undefined): string =>
  (parts ?? [])
    .filter((p) => typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");

/**
 * A v1.0 task as the Hermes record: `artifacts` are the artifacts' text parts, one `{text}` each;
 * `status.message` is the status message's text, or a stock sentence for the state. `peer_cn` is the caller's
 * certificate name (only a task's owner reads it), never what a metadata written by a caller says.
 */
export function toLegacyRecord(t: Task, callerName: string, now: () => string = () => new Date().toISOString()): LegacyTaskRecord {
  const { [LEGACY_METADATA_KEY]: legacy, ...rest } = t.metadata ?? {};
  const metadata = { ...rest, peer_cn: callerName };
  const saved = isObj(legacy) ? legacy : {};
  const firstUser = (t.history ?? []).find((m) => m.role === "ROLE_USER");
  const state = toV03State(t.status.state);
  const statusText = textOf(t.status.message?.parts);
  return {
    taskId: t.id,
    task: typeof saved.task === "string" ? saved.task : textOf(firstUser?.parts),
    requester: typeof saved.requester === "string" ? saved.requester : callerName,
    metadata,
    artifacts: (t.artifacts ?? []).flatMap((a) => a.parts.filter((p) => typeof p.text === "string").map((p) => ({ text: p.text as string }))),
    status: { state, message: statusText || LEGACY_STATUS_TEXT[state], timestamp: t.status.timestamp || now() },
  };
}

/** An agent may answer a `tasks/send` with a Message instead of a task: report it as a completed record. */
export function legacyRecordFromMessage(m: Message, p: LegacySendParams, callerName: string, now: () => string = () => new Date().toISOString()): LegacyTaskRecord {
  return {
    taskId: m.taskId || p.taskId || m.messageId,
    task: p.task,
    requester: p.requester ?? callerName,
    metadata: { ...p.metadata, peer_cn: callerName },
    artifacts: m.parts.filter((x) => typeof x.text === "string").map((x) => ({ text: x.text as string })),
    status: { state: "completed", message: LEGACY_STATUS_TEXT.completed, timestamp: now() },
  };
}
