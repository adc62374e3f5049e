/**
 * The two A2A bindings as test drivers with one shape: an operation (by its JSON-RPC method name) and its
 * params go in, and what comes back is read into one outcome, so a scenario can be written once and run
 * through both. The drivers build every request by hand (raw fetch over mTLS): what is tested is the wire.
 */
import type { TlsIdentity } from "./fleet";
import { post, reply, type RpcReply } from "./rpc";
import { openSse, openSseRequest, type SseConnection } from "./sse";

export type BindingName = "JSONRPC" | "HTTP+JSON";

/** A call's outcome, whichever binding carried it. */
export interface Outcome {
  ok: boolean;
  result?: any;
  /** The ErrorInfo reason of a refusal. */
  reason?: string;
  message?: string;
  /** The binding's own error code: JSON-RPC's code, or the HTTP status of an HTTP+JSON error. */
  code?: number;
  /** The HTTP status of the answer. */
  status: number;
  reply: RpcReply;
}

/** One stream item: a StreamResponse, or the error that ended the stream. */
export interface StreamItem {
  id?: string;
  item?: any;
  error?: { reason?: string; code?: number; message?: string };
}

export interface StreamOutcome {
  ok: boolean;
  /** The refusal, when the stream did not start. */
  refused?: Outcome;
  next(): Promise<StreamItem | undefined>;
  rest(): Promise<StreamItem[]>;
  close(): void;
}

export interface BindingDriver {
  name: BindingName;
  call(who: TlsIdentity, op: string, params: any, headers?: Record<string, string>): Promise<Outcome>;
  /** SendStreamingMessage or SubscribeToTask. `viaGet`: subscribe with GET (HTTP+JSON takes both). */
  stream(
    who: TlsIdentity,
    op: string,
    params: any,
    headers?: Record<string, string>,
    viaGet?: boolean,
  ): Promise<StreamOutcome>;
  /** A raw body where SendMessage goes. */
  sendRaw(who: TlsIdentity, body: string, headers?: Record<string, string>): Promise<Outcome>;
}

const V1 = { "a2a-version": "1.0" };
let nextId = 1;

export function jsonRpcDriver(base: string): BindingDriver {
  const url = `${base}/`;
  const read = (reply: RpcReply): Outcome => {
    const e = reply.body?.error;
    if (!e)
      return {
        ok: reply.status === 200 && reply.body !== undefined && "result" in reply.body,
        result: reply.body?.result,
        status: reply.status,
        reply,
      };
    return { ok: false, reason: e.data?.[0]?.reason, message: e.message, code: e.code, status: reply.status, reply };
  };
  return {
    name: "JSONRPC",
    call: async (who, op, params, headers = V1) =>
      read(await post(url, who, JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: op, params }), headers)),
    sendRaw: async (who, body, headers = V1) => read(await post(url, who, body, headers)),
    async stream(who, op, params, headers = {}) {
      const conn = await openSse(url, who, op, params, headers);
      return streamOf(conn, read, (data) =>
        data.error
          ? { error: { reason: data.error.data?.[0]?.reason, code: data.error.code, message: data.error.message } }
          : { item: data.result },
      );
    },
  };
}

export function httpJsonDriver(base: string): BindingDriver {
  const read = (reply: RpcReply): Outcome => {
    if (reply.status < 400) return { ok: true, result: reply.body, status: reply.status, reply };
    const e = reply.body?.error;
    return {
      ok: false,
      reason: e?.details?.[0]?.reason,
      message: e?.message,
      code: reply.status,
      status: reply.status,
      reply,
    };
  };
  const request = async (
    who: TlsIdentity,
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<RpcReply> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/a2a+json" }),
        accept: "application/a2a+json",
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      tls: { cert: who.cert, key: who.key, ca: who.ca },
    } as RequestInit);
    return reply(res);
  };
  return {
    name: "HTTP+JSON",
    async call(who, op, params, headers = V1) {
      const [method, path, body] = route(op, params ?? {});
      return read(await request(who, method, path, body, headers));
    },
    async sendRaw(who, body, headers = V1) {
      const res = await post(`${base}/message:send`, who, body, headers);
      return read(res);
    },
    async stream(who, op, params, headers = {}, viaGet = false) {
      const [method, path, body] = route(op, params);
      const get = viaGet && op === "SubscribeToTask";
      const conn = await openSseRequest(`${base}${path}`, who, {
        method: get ? "GET" : method,
        headers: {
          accept: "text/event-stream",
          ...(get ? {} : { "content-type": "application/a2a+json" }),
          ...V1,
          ...headers,
        },
        body: get ? undefined : JSON.stringify(body ?? {}),
      });
      return streamOf(conn, read, (data, event) =>
        event === "error" || data.error
          ? {
              error: { reason: data.error?.details?.[0]?.reason, code: data.error?.code, message: data.error?.message },
            }
          : { item: data },
      );
    },
  };
}

/** Where an operation goes over HTTP+JSON (spec §11.3): method, path (with query), body. */
function route(op: string, p: any): [string, string, unknown] {
  const id = encodeURIComponent(p.id ?? "");
  const task = encodeURIComponent(p.taskId ?? "");
  const query = (fields: Record<string, unknown>) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) q.set(k, String(v));
    const s = q.toString();
    return s ? `?${s}` : "";
  };
  switch (op) {
    case "SendMessage":
      return ["POST", "/message:send", p];
    case "SendStreamingMessage":
      return ["POST", "/message:stream", p];
    case "GetTask":
      return ["GET", `/tasks/${id}${query({ historyLength: p.historyLength })}`, undefined];
    case "ListTasks":
      return ["GET", `/tasks${query(p)}`, undefined];
    case "CancelTask":
      return ["POST", `/tasks/${id}:cancel`, {}];
    case "SubscribeToTask":
      return ["POST", `/tasks/${id}:subscribe`, {}];
    case "CreateTaskPushNotificationConfig": {
      const { taskId: _t, ...body } = p;
      return ["POST", `/tasks/${task}/pushNotificationConfigs`, body];
    }
    case "GetTaskPushNotificationConfig":
      return ["GET", `/tasks/${task}/pushNotificationConfigs/${id}`, undefined];
    case "ListTaskPushNotificationConfigs":
      return [
        "GET",
        `/tasks/${task}/pushNotificationConfigs${query({ pageSize: p.pageSize, pageToken: p.pageToken })}`,
        undefined,
      ];
    case "DeleteTaskPushNotificationConfig":
      return ["DELETE", `/tasks/${task}/pushNotificationConfigs/${id}`, undefined];
    case "GetExtendedAgentCard":
      return ["GET", "/extendedAgentCard", undefined];
    default:
      // An operation the binding does not have: a path in its namespace that names nothing.
      return ["POST", `/tasks/${id || "x"}:${op}`, {}];
  }
}

/**
 * Reads a stream's events as StreamItems. A stream that did not start (a JSON answer instead of
 * text/event-stream) is a refusal, read as a call's answer would be.
 */
function streamOf(
  conn: SseConnection,
  read: (reply: RpcReply) => Outcome,
  item: (data: any, event?: string) => StreamItem,
): StreamOutcome {
  const next = async () => {
    const e = await conn.next();
    return e && { id: e.id, ...item(e.data, e.event) };
  };
  if (conn.text !== undefined) {
    let body: unknown;
    try {
      body = JSON.parse(conn.text);
    } catch {
      body = undefined;
    }
    const refused = read({ status: conn.status, body, text: conn.text, headers: conn.headers });
    return { ok: false, refused, next: async () => undefined, rest: async () => [], close: () => conn.close() };
  }
  return {
    ok: true,
    next,
    async rest() {
      const out: StreamItem[] = [];
      for (let e = await next(); e; e = await next()) out.push(e);
      return out;
    },
    close: () => conn.close(),
  };
}
