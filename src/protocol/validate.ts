import { bad, isObj, nonEmptyString, optBool, optInt, optString, type Obj } from "./field-checks";
import type {
  CancelTaskParams,
  GetTaskParams,
  GetTaskPushNotificationConfigParams,
  ListTaskPushNotificationConfigsParams,
  ListTasksParams,
  Message,
  Part,
  SendMessageParams,
  SubscribeToTaskParams,
  TaskPushNotificationConfig,
  TaskState,
} from "./types";
import { TASK_STATES } from "./types";

/**
 * Hand-written checks of method params: they run on every request, name the exact field that is wrong, and
 * cost next to nothing. Each returns the params typed, or throws -32602 InvalidParams.
 */
function params(p: unknown): Obj {
  if (!isObj(p)) throw bad("params must be an object");
  return camelKeys(p) as Obj;
}

/**
 * ProtoJSON readers accept a field's proto name (task_id) as well as its JSON name (taskId); so do we. The
 * free-form contents of `data` and `metadata` are left exactly as sent.
 */
function camelKeys(v: unknown): unknown {
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const c = camelKeys(v[i]);
      if (c !== v[i]) (out ??= [...v])[i] = c;
    }
    return out ?? v;
  }
  if (!isObj(v)) return v;
  // Most requests use JSON names only: then nothing is copied.
  let out: Obj | undefined;
  for (const k in v) {
    const key = k.includes("_") ? k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : k;
    const val = key === "data" || key === "metadata" ? v[k] : camelKeys(v[k]);
    if (key !== k || val !== v[k]) {
      out ??= { ...v };
      if (key !== k) delete out[k];
      out[key] = val;
    }
  }
  return out ?? v;
}

const PART_FIELDS = ["text", "raw", "url", "data", "filename", "mediaType", "metadata"] as const;
const MESSAGE_FIELDS = [
  "messageId",
  "contextId",
  "taskId",
  "role",
  "parts",
  "metadata",
  "extensions",
  "referenceTaskIds",
] as const;

/** Only the fields the protocol defines: unknown ones are ignored, not stored and echoed back to others. */
function pick<T>(o: Obj, fields: readonly string[]): T {
  const out: Obj = {};
  for (const f of fields) if (o[f] !== undefined && o[f] !== null) out[f] = o[f];
  return out as T;
}

function part(p: unknown, where: string): Part {
  if (!isObj(p)) throw bad(`${where} must be an object`);
  let kinds = 0;
  if (p.text !== undefined) {
    if (typeof p.text !== "string") throw bad(`${where}.text must be a string`);
    kinds++;
  }
  if (p.raw !== undefined) {
    if (typeof p.raw !== "string" || !isBase64(p.raw))
      throw bad(
        `${where}.raw must be the file's bytes as base64 (RFC 4648, standard or URL-safe alphabet, padding optional)`,
      );
    kinds++;
  }
  if (p.url !== undefined) {
    if (typeof p.url !== "string") throw bad(`${where}.url must be a string`);
    const why = contentUrlProblem(p.url);
    if (why) throw bad(`${where}.url ${why}`);
    kinds++;
  }
  if (p.data !== undefined) kinds++;
  if (kinds !== 1) throw bad(`${where} must have exactly one of text, raw, url or data`);
  if (p.metadata !== undefined && !isObj(p.metadata)) throw bad(`${where}.metadata must be an object`);
  for (const f of ["filename", "mediaType"] as const)
    if (p[f] !== undefined && p[f] !== null && typeof p[f] !== "string") throw bad(`${where}.${f} must be a string`);
  return pick<Part>(p, PART_FIELDS);
}

/**
 * A part's `raw` is `bytes` in a2a.proto, which ProtoJSON writes as base64: the standard alphabet with
 * padding, and parsers also take the URL-safe one and no padding. One alphabet per value, padding only at the
 * end, and never a length no byte string encodes to (one character past a group of four).
 */
const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;
function isBase64(s: string): boolean {
  if (!BASE64.test(s)) return false;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  if (pad > 0 && s.length % 4 !== 0) return false;
  return (s.length - pad) % 4 !== 1;
}

/**
 * URL schemes a part's `url` may have: a2a.proto's "a `url` pointing to the file's content", which the
 * receiver fetches (http, https) or reads in place (data). Anything else (javascript:, file:, a relative
 * reference) points at no content another agent can get, or is a script for whoever opens it.
 */
export const CONTENT_URL_SCHEMES = ["https:", "http:", "data:"] as const;

function contentUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an absolute URL pointing to the file's content (https://..., http://... or data:...)";
  }
  if (!(CONTENT_URL_SCHEMES as readonly string[]).includes(parsed.protocol))
    return `has the scheme ${parsed.protocol} where this node takes ${CONTENT_URL_SCHEMES.join(", ")} (a URL pointing to the file's content)`;
  if ((parsed.protocol === "https:" || parsed.protocol === "http:") && !parsed.hostname) return "names no host";
  return undefined;
}

export function message(m: unknown, where = "params.message"): Message {
  if (!isObj(m)) throw bad(`${where} is required and must be an object`);
  if (typeof m.messageId !== "string" || m.messageId.length === 0)
    throw bad(`${where}.messageId must be a non-empty string`);
  if (m.messageId.length > 200) throw bad(`${where}.messageId is longer than 200 characters`);
  if (m.role !== "ROLE_USER" && m.role !== "ROLE_AGENT") throw bad(`${where}.role must be ROLE_USER or ROLE_AGENT`);
  if (!Array.isArray(m.parts) || m.parts.length === 0) throw bad(`${where}.parts must be a non-empty array`);
  const parts = m.parts.map((p, i) => part(p, `${where}.parts[${i}]`));
  optString(m, "contextId", where);
  optString(m, "taskId", where);
  if (m.metadata !== undefined && m.metadata !== null && !isObj(m.metadata))
    throw bad(`${where}.metadata must be an object`);
  return { ...pick<Message>(m, MESSAGE_FIELDS), parts };
}

export function sendMessageParams(p: unknown): SendMessageParams {
  const o = params(p);
  o.message = message(o.message);
  if (o.configuration !== undefined && o.configuration !== null) {
    const c = o.configuration;
    if (!isObj(c)) throw bad("params.configuration must be an object");
    optInt(c, "historyLength", "params.configuration", 0);
    optBool(c, "returnImmediately", "params.configuration");
    if (c.acceptedOutputModes !== undefined && !Array.isArray(c.acceptedOutputModes))
      throw bad("params.configuration.acceptedOutputModes must be an array of strings");
    if (c.taskPushNotificationConfig !== undefined && c.taskPushNotificationConfig !== null) {
      // The task does not exist yet: its id is filled in once it does.
      const cfg = c.taskPushNotificationConfig;
      if (!isObj(cfg)) throw bad("params.configuration.taskPushNotificationConfig must be an object");
      c.taskPushNotificationConfig = pushConfigParams({ ...cfg, taskId: "pending" });
    }
  }
  if (o.metadata !== undefined && o.metadata !== null && !isObj(o.metadata))
    throw bad("params.metadata must be an object");
  return o as unknown as SendMessageParams;
}

function taskId(o: Obj): string {
  if (typeof o.id !== "string" || o.id.length === 0) throw bad("params.id must be a non-empty task id");
  return o.id;
}

export function getTaskParams(p: unknown): GetTaskParams {
  const o = params(p);
  return { id: taskId(o), historyLength: optInt(o, "historyLength", "params", 0) };
}

export function cancelTaskParams(p: unknown): CancelTaskParams {
  return { id: taskId(params(p)) };
}

export function listTasksParams(p: unknown): ListTasksParams {
  const o = p === undefined || p === null ? {} : params(p);
  const status = optString(o, "status", "params");
  if (
    status !== undefined &&
    status !== "" &&
    status !== "TASK_STATE_UNSPECIFIED" &&
    !TASK_STATES.includes(status as TaskState)
  )
    throw bad(`params.status must be one of ${TASK_STATES.join(", ")}`);
  const after = optString(o, "statusTimestampAfter", "params");
  if (after !== undefined && Number.isNaN(Date.parse(after)))
    throw bad("params.statusTimestampAfter must be an ISO-8601 timestamp");
  return {
    contextId: optString(o, "contextId", "params") || undefined,
    // TASK_STATE_UNSPECIFIED is the proto default: no filter.
    status: (status && status !== "TASK_STATE_UNSPECIFIED" ? status : undefined) as TaskState | undefined,
    pageSize: optInt(o, "pageSize", "params", 1, 100),
    pageToken: optString(o, "pageToken", "params") || undefined,
    historyLength: optInt(o, "historyLength", "params", 0),
    statusTimestampAfter: after,
    includeArtifacts: optBool(o, "includeArtifacts", "params"),
  };
}

export function subscribeParams(p: unknown): SubscribeToTaskParams {
  return { id: taskId(params(p)) };
}

/** A Last-Event-ID header: the sequence number of the last event the client saw. */
export function lastEventId(v: string | undefined): number | undefined {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw bad(`Last-Event-ID must be an event number this node sent (got '${v}')`);
  return n;
}

export function pushConfigParams(p: unknown): TaskPushNotificationConfig {
  const o = params(p);
  const taskId = nonEmptyString(o, "taskId", "params");
  const url = nonEmptyString(o, "url", "params");
  try {
    const u = new URL(url);
    if (u.protocol !== "https:" && u.protocol !== "http:") throw new Error();
  } catch {
    throw bad("params.url must be an http(s) URL");
  }
  const out: TaskPushNotificationConfig = { id: optString(o, "id", "params") ?? "", taskId, url };
  const token = optString(o, "token", "params");
  if (token) out.token = token;
  if (o.authentication !== undefined && o.authentication !== null) {
    const a = o.authentication;
    if (!isObj(a) || typeof a.scheme !== "string" || a.scheme === "")
      throw bad("params.authentication.scheme must be a non-empty string");
    out.authentication = { scheme: a.scheme, credentials: optString(a, "credentials", "params.authentication") };
  }
  return out;
}

export function pushConfigRef(p: unknown): GetTaskPushNotificationConfigParams {
  const o = params(p);
  return { taskId: nonEmptyString(o, "taskId", "params"), id: nonEmptyString(o, "id", "params") };
}

export function listPushConfigsParams(p: unknown): ListTaskPushNotificationConfigsParams {
  const o = params(p);
  return {
    taskId: nonEmptyString(o, "taskId", "params"),
    pageSize: optInt(o, "pageSize", "params", 1, 100),
    pageToken: optString(o, "pageToken", "params") || undefined,
  };
}
