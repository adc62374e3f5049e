/**
 * Twin of the Hermes A2A plugin's client: plugins/platforms/a2a/tools.py (NousResearch/hermes-agent @
 * 07ea4300973b2c4857dad084ff949ba33a14eeaa), the `a2a_call` and `a2a_discover` tools the agent calls, with their
 * transport (stdlib urllib: `_http_get_json`, `_http_post_json`, `_http_post_sse`), as the model drives them:
 * `a2aCall({agent, message, context_id})` returns the text the model reads. See ./index.ts for the whole twin.
 *
 * What a server meets, as the source has it:
 * - The card first (`/.well-known/agent-card.json`, then `/.well-known/agent.json` on a 404), with the peer's
 *   credentials; any failure there is ignored (no card: SendMessage to the configured URL). The RPC URL is the
 *   card's first JSONRPC interface URL (as the card writes it, host included), else its top-level `url`.
 * - Every POST carries `A2A-Version: 1.0`, `User-Agent: Hermes-A2A/1.0`, `Connection: close` (urllib), and the
 *   JSON-RPC id `task-<16 hex>`; the message is `{role: ROLE_USER, parts: [{text, mediaType}], messageId,
 *   contextId}` (a new `ctx-…` when the model gave none); never a `taskId`, never a push config, no
 *   `configuration` at all (so a v1.0 server's SendMessage blocks, by the spec's default).
 * - With `capabilities.streaming`: SendStreamingMessage first. Only `data:` lines are read, one JSON document
 *   each; every artifactUpdate's parts are gathered (whatever `append` says) and joined by "\n" in the reply;
 *   the stream is done at COMPLETED, FAILED, CANCELED or REJECTED. A stream that closes before one of those
 *   (INPUT_REQUIRED and AUTH_REQUIRED included), before any frame, or breaks, and an HTTP 404/405/501 or a
 *   connection failure, fall back to SendMessage with the same request: the same JSON-RPC id and the same
 *   messageId. A JSON-RPC error on the stream does not fall back.
 * - Timeouts: the peer's `timeout` (default 120 s) bounds the connect and each read of SendMessage; a stream
 *   may be silent 30 s at most (min(timeout, 30)) and lasts at most timeout + 30 s.
 * - Errors as the model reads them: HTTP 401/403 "rejected auth", 429 "rate limited", other HTTP errors
 *   "failed — HTTP N" (the body unread), a JSON-RPC error "returned an error: MESSAGE".
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { pyDumps } from "./py-json";
import { redactOutbound } from "./security";
import {
  extractText,
  newContextId,
  newTaskId,
  PROTOCOL_VERSION,
  STATE,
  TERMINAL_STATES,
  textMessage,
  unwrapSendMessageResponse,
} from "./wire";

type Json = Record<string, unknown>;

/** One entry of config.yaml's `a2a_agents`. */
export interface PeerConfig {
  url: string;
  auth?: { type: "bearer"; token: string };
  headers?: Record<string, string>;
  /** Seconds (default 120). */
  timeout?: number;
  capabilities?: string[];
  tenant?: string;
}

export interface HermesA2AClientOptions {
  /** config.yaml `a2a_agents`. */
  agents?: Record<string, PeerConfig>;
  /** The CA bundle Python's ssl module trusts (SSL_CERT_FILE), as PEM; default: the system's. */
  ca?: string;
  /** _STREAM_READ_TIMEOUT_S (30 s in the source); shorter only to test the starved-stream path quickly. */
  streamReadTimeoutS?: number;
}

/** What went over the wire, in order, for tests to compare with the server's view. */
export interface ClientExchange {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: Json;
  status?: number;
  contentType?: string;
  /** The `data:` frames of a stream, parsed. */
  frames?: unknown[];
  error?: string;
}

class HTTPError extends Error {
  constructor(readonly code: number) {
    super(`HTTP Error ${code}`);
  }
}

/** _A2aTransportError: the stream gave no outcome; safe to send again with SendMessage. */
class TransportError extends Error {}

/** urllib.error.URLError, socket timeouts and http.client.HTTPException (a chunked body cut short): no answer. */
class UrlError extends Error {}

/** json.JSONDecodeError, a ValueError: a2a_call returns its message as the reply. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ValueError(`Expecting value: ${(e as Error).message}`);
  }
}

/** The reply to the model, and how the send went (for tests). */
export interface CallResult {
  /** What a2a_call returns to the model. */
  text: string;
  reply?: string;
  contextId?: string;
  state?: string;
  /** The streaming attempt failed at the transport and SendMessage was sent instead. */
  fellBack?: boolean;
}

export class HermesA2AClient {
  readonly exchanges: ClientExchange[] = [];

  constructor(private readonly options: HermesA2AClientOptions = {}) {}

  /** `a2a_call(agent, message, context_id?)`. */
  async a2aCall(args: { agent?: string; message?: string; context_id?: string }): Promise<CallResult> {
    const agent = (args.agent ?? "").trim();
    const message = (args.message ?? "").trim();
    const contextId = (args.context_id ?? "").trim();
    if (!agent || !message) return { text: "Error: both 'agent' and 'message' are required." };
    const peer = this.resolvePeer(agent);
    if (!peer?.url)
      return {
        text: `Error: unknown agent '${agent}'. Configure it under 'a2a_agents' in config.yaml or pass a full http(s):// URL.`,
      };
    let sent: { reply: string; contextId: string; state: string; fellBack: boolean };
    try {
      sent = await this.sendTask(agent, peer, message, contextId);
    } catch (e) {
      if (e instanceof HTTPError) {
        if (e.code === 401 || e.code === 403)
          return { text: `Error: peer '${agent}' rejected auth (HTTP ${e.code}). Check the configured token.` };
        if (e.code === 429) return { text: `Error: peer '${agent}' rate limited us (HTTP 429). Retry later.` };
        return { text: `Error: call to '${agent}' failed — HTTP ${e.code}.` };
      }
      if (e instanceof ValueError) return { text: e.message };
      return { text: `Error: call to '${agent}' failed — ${(e as Error).message}.` };
    }
    let header = `[${agent} · context ${sent.contextId}`;
    if (sent.state) header += ` · ${shortState(sent.state)}`;
    header += "]";
    let body = sent.reply || "(no text reply)";
    if (sent.state === STATE.INPUT_REQUIRED)
      body += `\n\n(The peer needs more input — answer by calling a2a_call again with context_id '${sent.contextId}'.)`;
    return {
      text: `${header}\n${body}`,
      reply: sent.reply,
      contextId: sent.contextId,
      state: sent.state,
      fellBack: sent.fellBack,
    };
  }

  /** `a2a_discover(url)`: the card read without credentials, summarized. */
  async a2aDiscover(args: { url?: string }): Promise<string> {
    const url = (args.url ?? "").trim();
    if (!url) return "Error: 'url' is required (e.g. http://localhost:9999).";
    let card: Json;
    try {
      card = await this.fetchCard(url, {}, 120);
    } catch (e) {
      if (e instanceof HTTPError) return `Error: discovery failed — HTTP ${e.code} from ${url}.`;
      return `Error: could not reach ${url} — ${(e as Error).message}.`;
    }
    const caps = (card.capabilities as Json) ?? {};
    const skills = (card.skills as Json[]) ?? [];
    const ifaces = ((card.supportedInterfaces as Json[]) ?? []).filter((i) => i && typeof i === "object");
    const proto =
      ifaces.map((i) => `${i.protocolBinding ?? "?"} v${i.protocolVersion ?? "?"}`).join(", ") ||
      `v${card.protocolVersion ?? "?"} (pre-1.0 card)`;
    const lines = [
      `Agent: ${card.name ?? "?"}`,
      `Description: ${card.description ?? ""}`,
      `URL: ${rpcUrl(url, card)}`,
      `Protocol: ${proto}`,
      `Streaming: ${pyBool(caps.streaming)}  Push: ${pyBool(caps.pushNotifications)}  Auth required: ${truthy(card.security) ? "yes" : "no"}`,
      `Skills (${skills.length}):`,
      ...skills.slice(0, 20).map((s) => `  - ${s.name ?? s.id ?? "?"}: ${s.description ?? ""}`),
    ];
    return lines.join("\n");
  }

  private resolvePeer(agent: string): PeerConfig | undefined {
    if (agent.startsWith("http://") || agent.startsWith("https://")) return { url: agent, timeout: 120 };
    return this.options.agents?.[agent];
  }

  /** _send_task. */
  private async sendTask(label: string, peer: PeerConfig, message: string, contextId: string) {
    const headers: Record<string, string> = {
      ...(peer.auth?.type === "bearer" && peer.auth.token ? { Authorization: `Bearer ${peer.auth.token}` } : {}),
      ...(peer.headers ?? {}),
    };
    const timeout = peer.timeout ?? 120;
    let card: Json | undefined;
    try {
      card = await this.fetchCard(peer.url, headers, Math.min(timeout, 30));
    } catch {
      card = undefined;
    }
    const ctx = contextId || newContextId();
    const safe = redactOutbound(message);
    const rpcBody: Json = {
      jsonrpc: "2.0",
      id: newTaskId(),
      method: "SendMessage",
      params: { message: textMessage("ROLE_USER", safe, ctx) },
    };
    const tenant = interfaceTenant(card, peer);
    if (tenant) (rpcBody.params as Json).tenant = tenant;
    const url = rpcUrl(peer.url, card);
    let fellBack = false;
    if (card && truthy((card.capabilities as Json | undefined)?.streaming)) {
      try {
        return { ...(await this.sendTaskStream(label, url, rpcBody, headers, timeout, ctx)), fellBack };
      } catch (e) {
        if (e instanceof HTTPError) {
          if (![404, 405, 501].includes(e.code)) throw e;
        } else if (!(e instanceof TransportError) && !(e instanceof UrlError)) throw e;
        fellBack = true;
      }
    }
    const resp = (await this.postJson(url, rpcBody, headers, timeout)) as Json;
    if ("error" in resp) {
      const err = resp.error as Json;
      throw new ValueError(
        `Peer '${label}' returned an error: ${typeof err === "object" && err && "message" in err ? err.message : JSON.stringify(err)}`,
      );
    }
    const payload = unwrapSendMessageResponse(resp.result ?? {});
    const reply = replyTextFromResult(payload);
    let replyCtx = ctx;
    let state = "";
    if (payload && typeof payload === "object" && !Array.isArray(payload)) {
      const p = payload as Json;
      replyCtx = "contextId" in p ? (p.contextId as string) : ctx;
      state = (((p.status as Json) ?? {}).state as string) ?? "";
    }
    return { reply, contextId: replyCtx, state, fellBack };
  }

  /** _send_task_stream. */
  private async sendTaskStream(
    label: string,
    url: string,
    body: Json,
    headers: Record<string, string>,
    timeout: number,
    ctx: string,
  ) {
    const streamBody = { ...body, method: "SendStreamingMessage" };
    let result: Json | undefined;
    let sawTerminal = false;
    const artifactParts: unknown[] = [];
    for await (const frame of this.postSse(url, streamBody, headers, timeout)) {
      if (!frame || typeof frame !== "object" || Array.isArray(frame)) continue;
      const f = frame as Json;
      if (truthy(f.error)) {
        const err = f.error as Json;
        throw new ValueError(
          `Peer '${label}' returned an error: ${typeof err === "object" && "message" in err ? err.message : JSON.stringify(err)}`,
        );
      }
      const candidate = f.result;
      if (!candidate || typeof candidate !== "object" || Array.isArray(candidate)) continue;
      const c = candidate as Json;
      let cand: Json;
      if (isObj(c.artifactUpdate)) {
        const art = ((c.artifactUpdate as Json).artifact as Json) ?? {};
        if (truthy(art.parts)) artifactParts.push(...(art.parts as unknown[]));
        continue;
      }
      if (isObj(c.statusUpdate)) {
        const upd = c.statusUpdate as Json;
        cand = { status: upd.status ?? {}, contextId: upd.contextId ?? "", taskId: upd.taskId ?? "" };
      } else if (isObj(c.task)) cand = c.task as Json;
      else if (isObj(c.message))
        cand = { status: { state: "", message: c.message }, contextId: (c.message as Json).contextId ?? "" };
      else cand = c;
      result = cand;
      const state = (((cand.status as Json) ?? {}).state as string) ?? "";
      if (TERMINAL_STATES.has(state)) {
        sawTerminal = true;
        break;
      }
    }
    if (!result) throw new TransportError(`Peer '${label}' stream closed without a result`);
    if (!sawTerminal) throw new TransportError(`Peer '${label}' stream closed without a terminal state`);
    if (artifactParts.length) result = { ...result, artifacts: [{ parts: artifactParts }] };
    return {
      reply: replyTextFromResult(result),
      contextId: (result.contextId as string) ?? ctx,
      state: (((result.status as Json) ?? {}).state as string) ?? "",
    };
  }

  // ── urllib ────────────────────────────────────────────────────────────

  private async fetchCard(base: string, headers: Record<string, string>, timeout: number): Promise<Json> {
    try {
      return (await this.getJson(`${base.replace(/\/+$/, "")}/.well-known/agent-card.json`, headers, timeout)) as Json;
    } catch (e) {
      if (!(e instanceof HTTPError) || e.code !== 404) throw e;
    }
    return (await this.getJson(`${base.replace(/\/+$/, "")}/.well-known/agent.json`, headers, timeout)) as Json;
  }

  private async getJson(url: string, headers: Record<string, string>, timeout: number): Promise<unknown> {
    const res = await this.open("GET", url, { "User-Agent": "Hermes-A2A/1.0", ...headers }, undefined, timeout);
    return parseJson((await readAll(res.response)).toString("utf8"));
  }

  private async postJson(url: string, body: Json, headers: Record<string, string>, timeout: number): Promise<unknown> {
    const res = await this.open(
      "POST",
      url,
      {
        "User-Agent": "Hermes-A2A/1.0",
        ...headers,
        Accept: "application/json",
        "Content-Type": "application/json",
        "A2A-Version": PROTOCOL_VERSION,
      },
      body,
      timeout,
    );
    return parseJson((await readAll(res.response)).toString("utf8"));
  }

  /** _http_post_sse: yields each `data:` line's JSON; a non-SSE answer is one JSON document. */
  private async *postSse(
    url: string,
    body: Json,
    headers: Record<string, string>,
    timeout: number,
  ): AsyncGenerator<unknown> {
    const readTimeout = this.options.streamReadTimeoutS ?? 30;
    const deadline = Date.now() + (timeout + readTimeout) * 1000;
    const res = await this.open(
      "POST",
      url,
      {
        "User-Agent": "Hermes-A2A/1.0",
        ...headers,
        Accept: "text/event-stream",
        "Content-Type": "application/json",
        "A2A-Version": PROTOCOL_VERSION,
      },
      body,
      Math.min(timeout, readTimeout),
    );
    const ex = res.exchange;
    ex.frames = [];
    try {
      if (!(res.response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
        const doc = parseJson((await readAll(res.response)).toString("utf8"));
        ex.frames.push(doc);
        yield doc;
        return;
      }
      for await (const raw of lines(res.response)) {
        if (Date.now() > deadline) throw new TransportError(`stream exceeded total deadline of ${timeout}s`);
        const line = raw.trim();
        if (!line.startsWith("data:")) continue;
        let doc: unknown;
        try {
          doc = JSON.parse(line.slice(5).trim());
        } catch {
          continue; // a malformed frame is skipped
        }
        ex.frames.push(doc);
        yield doc;
      }
    } finally {
      res.response.destroy();
    }
  }

  /**
   * urlopen: HTTP/1.1 with `Connection: close` and `Accept-Encoding: identity`; header names title-cased as
   * urllib sends them; `timeout` seconds for the connect and for each read; non-2xx raises HTTPError (body
   * unread); a refused connection, a TLS failure or a timeout raises URLError.
   */
  private open(
    method: "GET" | "POST",
    url: string,
    headers: Record<string, string>,
    body: Json | undefined,
    timeout: number,
  ) {
    const u = new URL(url);
    const data = body === undefined ? undefined : Buffer.from(pyDumps(body), "utf8");
    const sent: Record<string, string> = { "Accept-Encoding": "identity", Host: u.host };
    for (const [k, v] of Object.entries(headers)) sent[titleCase(k)] = v;
    if (data) sent["Content-Length"] = String(data.length);
    sent.Connection = "close";
    const exchange: ClientExchange = { method, url, headers: sent, body };
    this.exchanges.push(exchange);
    return new Promise<{ response: IncomingMessage; exchange: ClientExchange }>((resolve, reject) => {
      const fail = (err: Error) => {
        exchange.error = err.message;
        reject(err);
      };
      const options = {
        method,
        headers: sent,
        timeout: timeout * 1000,
        ...(u.protocol === "https:" && this.options.ca ? { ca: this.options.ca } : {}),
      };
      const req = (u.protocol === "https:" ? httpsRequest : httpRequest)(u, options, (response) => {
        exchange.status = response.statusCode;
        exchange.contentType = response.headers["content-type"];
        response.setTimeout(timeout * 1000, () => response.destroy(new UrlError("timed out")));
        if ((response.statusCode ?? 0) >= 400) {
          response.resume();
          return fail(new HTTPError(response.statusCode ?? 0));
        }
        resolve({ response, exchange });
      });
      req.on("timeout", () => req.destroy(new UrlError("timed out")));
      req.on("error", (err) => fail(err instanceof UrlError ? err : new UrlError(`<urlopen error ${err.message}>`)));
      req.end(data);
    });
  }
}

class ValueError extends Error {}

/**
 * A read error of the response: a reset read is an OSError (not caught for the fallback); a body cut short
 * (the connection closed mid chunked body: the runtime's "aborted") is http.client's IncompleteRead, an
 * HTTPException (caught: the stream falls back to SendMessage).
 */
function readError(err: unknown): Error {
  const e = err as NodeJS.ErrnoException;
  if (e instanceof UrlError) return e;
  if (e?.code === "ECONNRESET" && e.syscall === "read") return new Error("[Errno 104] Connection reset by peer");
  return new UrlError(`IncompleteRead (${e?.message ?? String(err)})`);
}

function isObj(v: unknown): boolean {
  return Boolean(v) && typeof v === "object" && !Array.isArray(v);
}

/** Python truthiness of a JSON value. */
function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v && typeof v === "object") return Object.keys(v).length > 0;
  return Boolean(v);
}

const pyBool = (v: unknown) => (truthy(v) ? "True" : "False");

/** urllib's `name.title()`: "a2a-version" → "A2A-Version". */
function titleCase(name: string): string {
  return name.toLowerCase().replace(/(^|[^a-z])([a-z])/g, (_, pre: string, c: string) => pre + c.toUpperCase());
}

/** TASK_STATE_COMPLETED → completed. */
function shortState(state: string): string {
  return state.replace("TASK_STATE_", "").replaceAll("_", "-").toLowerCase();
}

function selectJsonrpcInterface(card: Json | undefined): Json | undefined {
  for (const i of (card?.supportedInterfaces as Json[] | undefined) ?? [])
    if (isObj(i) && i.protocolBinding === "JSONRPC" && truthy(i.url)) return i;
  return undefined;
}

/**
 * The card's JSONRPC interface URL (host and all), its top-level url, or the configured base without its trailing "/".
 */
function rpcUrl(base: string, card: Json | undefined): string {
  const iface = selectJsonrpcInterface(card);
  if (iface) return String(iface.url);
  if (card && typeof card.url === "string" && card.url) return card.url;
  return base.replace(/\/+$/, "");
}

function interfaceTenant(card: Json | undefined, peer: PeerConfig): string {
  const iface = selectJsonrpcInterface(card);
  if (iface && truthy(iface.tenant)) return String(iface.tenant);
  return peer.tenant ?? "";
}

/** _reply_text_from_result: the first artifact with text, else the status message, else the object as a message. */
function replyTextFromResult(result0: unknown): string {
  const result = unwrapSendMessageResponse(result0);
  if (!isObj(result)) return String(result);
  const r = result as Json;
  for (const a of (r.artifacts as Json[] | undefined) ?? []) {
    const t = extractText(a);
    if (t) return t;
  }
  const msg = ((r.status as Json) ?? {}).message;
  if (truthy(msg)) return extractText(msg as Json);
  return extractText(r);
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** `for raw in resp`: the body as lines, each with its "\n". */
async function* lines(res: IncomingMessage): AsyncGenerator<string> {
  let buf = "";
  const it = res[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<unknown>;
    try {
      next = await it.next();
    } catch (err) {
      throw readError(err);
    }
    if (next.done) break;
    buf += (next.value as Buffer).toString("utf8");
    let i: number;
    while ((i = buf.indexOf("\n")) !== -1) {
      yield buf.slice(0, i + 1);
      buf = buf.slice(i + 1);
    }
  }
  if (buf) yield buf;
}
