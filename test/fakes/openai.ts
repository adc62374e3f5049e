/**
 * A fake OpenAI-compatible model server, for the openai executor's tests: a twin of the Chat Completions API as
 * OpenAI documents it (https://platform.openai.com/docs/api-reference/chat/create and /chat-streaming), which
 * Ollama, llama.cpp's server, vLLM and LM Studio follow:
 * - POST /v1/chat/completions; with `stream: true`, `text/event-stream` chunks `data: {"object":
 *   "chat.completion.chunk","choices":[{"delta":{"content":...}}]}`, a chunk with `finish_reason`, a usage chunk
 *   with `"choices":[]` only when `stream_options.include_usage` is set, then `data: [DONE]`; without
 *   `stream`, one `chat.completion` object;
 * - errors as the API sends them: `{"error":{"message","type":"invalid_request_error","param","code"}}` with
 *   HTTP 400 for invalid content parts (unknown part types, image_url without a URL or with a non-image data URL,
 *   images sent to a model without vision), in the API's own wording;
 * - GET /v1/models, as readiness probes use it;
 * - with `apiKey`, HTTP 401 for a request without that bearer key, with OpenAI's two bodies: no key ("You
 *   didn't provide an API key...", code null) and a wrong one ("Incorrect API key provided: <the key, masked
 *   as OpenAI masks it>...", code invalid_api_key).
 * What it does not model: tool calls, logprobs, n > 1, and the real models' token accounting.
 */
import { connect, createServer, type Server as NetServer, type Socket } from "node:net";
import { Conditions } from "../helpers/until";

export interface FakeModelRequest {
  path: string;
  headers: Record<string, string>;
  body: any;
}

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface FakeModelOptions {
  /**
   * What the model says, given the chat messages it received, each content as text (an array's text parts
   * joined by newlines; the request as sent is in `requests`). Default: "echo: <last user message>".
   */
  reply?: (messages: { role: string; content: string }[]) => string;
  /** `false`: a model that cannot see images, refusing image_url parts as OpenAI's API does (HTTP 400). */
  vision?: false;
  /** Answer with this HTTP status and body instead. */
  fail?: { status: number; body: string };
  /** Hold every answer until the test calls release() (a slow model, without timers in the test). */
  hold?: boolean;
  /** The streamed tokens, exactly (default: the reply split after each space). Their concatenation is the answer. */
  tokens?: string[];
  /** Pause between streamed tokens (a model that produces tokens at a pace). */
  tokenDelayMs?: number;
  /** Send this many tokens, then drop the connection (the client sees a reset, not a clean end). */
  failAfterTokens?: number;
  /**
   * Send this many tokens, then nothing more, keeping the connection open until the client goes away (a stuck
   * model). For a non-streaming request: never answer.
   */
  stallAfterTokens?: number;
  /** `false`: answer plain JSON even when the client asked for a stream (a server without streaming). */
  stream?: false;
  /**
   * Put a TCP front in front of the server that resets the first N connections before any HTTP is read (a
   * model server still starting). With it, `attempts` counts TCP connections.
   */
  refuseFirst?: number;
  /** The usage reported (default: a count of the words). */
  usage?: FakeUsage;
  /** The only key accepted (`Authorization: Bearer KEY`); unset: no key needed, as local servers run. */
  apiKey?: string;
}

export interface FakeModel {
  url: string;
  requests: FakeModelRequest[];
  /**
   * Connection attempts: with `refuseFirst`, every TCP connection made to the fake (reset or served);
   * otherwise the number of chat-completions requests.
   */
  readonly attempts: number;
  /** Chat-completions requests whose client went away before the answer was complete. */
  readonly abortCount: number;
  /** Streamed tokens written so far (over all requests). */
  readonly tokensSent: number;
  /** Lets held answers go. */
  release(): void;
  /** Resolves when the n-th request (1-based) has arrived. */
  received(n: number): Promise<void>;
  /** Resolves when a request's connection was aborted by the client (one that happens after this call). */
  aborted(): Promise<void>;
  /** Resolves once at least n requests (default 1) were aborted by the client, including ones before this call. */
  sawAbort(n?: number): Promise<void>;
  /** Resolves once at least n streamed tokens were written. */
  sentTokens(n: number): Promise<void>;
  stop(): void;
}

/**
 * An OpenAI-compatible chat-completions server on loopback that behaves like the real ones: JSON answers with
 * choices/usage, SSE chunks when `stream: true`, HTTP errors, slow answers, paced tokens, answers that break
 * off or stall mid-stream, a server without streaming, and one that refuses its first connections.
 * GET /v1/models answers like the real ones (readiness probes).
 */
export function startFakeModel(options: FakeModelOptions = {}): FakeModel {
  const requests: FakeModelRequest[] = [];
  const arrivals: { n: number; resolve(): void }[] = [];
  const abortWaiters: (() => void)[] = [];
  const conditions = new Conditions();
  let releaseAll: () => void = () => {};
  let released = !options.hold;
  const gate = new Promise<void>((r) => (releaseAll = r));
  let abortCount = 0;
  let tokensSent = 0;
  let connections = 0;

  const wake = conditions.changed;
  const until = (ready: () => boolean): Promise<void> => conditions.until(ready).then(() => {});
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const refused =
        options.apiKey === undefined ? undefined : checkKey(req.headers.get("authorization"), options.apiKey);
      if (refused) return refused;
      if (req.method === "GET" && url.pathname === "/v1/models")
        return Response.json({ object: "list", data: [{ id: "fake-model", object: "model", owned_by: "test" }] });
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions")
        return Response.json({ error: { message: "not found" } }, { status: 404 });
      const body = (await req.json()) as any;
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      requests.push({ path: url.pathname, headers, body });
      for (const a of arrivals.filter((a) => a.n <= requests.length)) a.resolve();
      wake();
      let done = false;
      let clientGone!: () => void;
      const gone = new Promise<void>((r) => (clientGone = r));
      const onAbort = () => {
        clientGone();
        if (done) return;
        done = true;
        abortCount++;
        abortWaiters.splice(0).forEach((w) => w());
        wake();
      };
      req.signal.addEventListener("abort", onAbort);
      if (!released) await Promise.race([gate, gone]);
      if (options.fail) return new Response(options.fail.body, { status: options.fail.status });
      const refusal = checkMessages(body.messages, options.vision !== false);
      if (refusal) return refusal;
      const messages = (body.messages as { role: string; content: string | { type: string; text?: string }[] }[]).map(
        (m) => ({
          role: m.role,
          content:
            typeof m.content === "string"
              ? m.content
              : m.content.flatMap((p) => (p.type === "text" ? [p.text as string] : [])).join("\n"),
        }),
      );
      const text = options.tokens
        ? options.tokens.join("")
        : options.reply
          ? options.reply(messages)
          : `echo: ${messages.filter((m) => m.role === "user").at(-1)?.content}`;
      const words = options.tokens ?? text.split(/(?<= )/);
      const usage = options.usage ?? {
        prompt_tokens: 7,
        completion_tokens: words.length,
        total_tokens: 7 + words.length,
      };
      if (body.stream && options.stream !== false) {
        const enc = new TextEncoder();
        const chunk = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
        let i = 0;
        const stream = new ReadableStream<Uint8Array>({
          async pull(c) {
            // The pace applies between tokens and before a drop or a stall, so what was sent reaches the client.
            if (i > 0 && options.tokenDelayMs) await sleep(options.tokenDelayMs);
            if (options.failAfterTokens !== undefined && i >= options.failAfterTokens) {
              done = true;
              c.error(undefined); // drops the connection: the client sees a reset, not an end
              return;
            }
            if (options.stallAfterTokens !== undefined && i >= options.stallAfterTokens) {
              await gone;
              return;
            }
            if (i < words.length) {
              c.enqueue(
                chunk({
                  id: "c1",
                  object: "chat.completion.chunk",
                  model: body.model,
                  choices: [{ index: 0, delta: { content: words[i] } }],
                }),
              );
              i++;
              tokensSent++;
              wake();
              return;
            }
            c.enqueue(
              chunk({
                id: "c1",
                object: "chat.completion.chunk",
                model: body.model,
                choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
              }),
            );
            // As OpenAI streams usage: only when asked, in a chunk of its own with no choices, before [DONE].
            if (body.stream_options?.include_usage)
              c.enqueue(chunk({ id: "c1", object: "chat.completion.chunk", model: body.model, choices: [], usage }));
            c.enqueue(enc.encode("data: [DONE]\n\n"));
            done = true;
            c.close();
          },
          cancel() {
            onAbort();
          },
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream" } });
      }
      if (options.stallAfterTokens !== undefined) {
        await gone;
        return new Response(null, { status: 499 });
      }
      done = true;
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        usage,
      });
    },
  });

  // Optional TCP front: resets the first `refuseFirst` connections, then pipes to the HTTP server.
  let front: NetServer | undefined;
  let frontPort = 0;
  const sockets = new Set<Socket>();
  if (options.refuseFirst !== undefined) {
    const refuse = options.refuseFirst;
    front = createServer((sock) => {
      connections++;
      wake();
      sock.on("error", () => {});
      if (connections <= refuse) {
        sock.resetAndDestroy();
        return;
      }
      const up = connect(server.port as number, "127.0.0.1");
      up.on("error", () => {});
      sockets.add(sock);
      sockets.add(up);
      sock.pipe(up);
      up.pipe(sock);
      sock.on("close", () => {
        sockets.delete(sock);
        up.destroy();
      });
      up.on("close", () => {
        sockets.delete(up);
        sock.destroy();
      });
    });
    front.listen(0, "127.0.0.1");
    // Bun's node:net binds synchronously for a numeric port on loopback; fall back to the event otherwise.
    const addr = front.address();
    if (addr && typeof addr === "object") frontPort = addr.port;
    else throw new Error("fake model: the TCP front did not bind at once");
  }

  return {
    url: `http://127.0.0.1:${front ? frontPort : server.port}/v1`,
    requests,
    get attempts() {
      return front ? connections : requests.length;
    },
    get abortCount() {
      return abortCount;
    },
    get tokensSent() {
      return tokensSent;
    },
    release() {
      released = true;
      releaseAll();
    },
    received(n) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve) => arrivals.push({ n, resolve }));
    },
    aborted() {
      return new Promise((resolve) => abortWaiters.push(resolve));
    },
    sawAbort: (n = 1) => until(() => abortCount >= n),
    sentTokens: (n) => until(() => tokensSent >= n),
    stop: () => {
      for (const s of sockets) s.destroy();
      front?.close();
      void server.stop(true);
    },
  };
}

/**
 * OpenAI's answer to a request without the right key: HTTP 401, type invalid_request_error, its two
 * messages, and the given key masked as the API masks it (keys over 12 characters keep their first 8 and last
 * 4; shorter ones are shown whole).
 */
function checkKey(authorization: string | null, key: string): Response | undefined {
  const given = authorization?.startsWith("Bearer ") ? authorization.slice(7).trim() : "";
  if (given === key) return undefined;
  const error = given
    ? {
        message: `Incorrect API key provided: ${given.length > 12 ? `${given.slice(0, 8)}${"*".repeat(given.length - 12)}${given.slice(-4)}` : given}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      }
    : {
        message:
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
        type: "invalid_request_error",
        param: null,
        code: null,
      };
  return Response.json({ error }, { status: 401 });
}

/** An error answer in the shape OpenAI's API gives (HTTP 400, `error` with message, type, param, code). */
function invalidRequest(message: string, param: string | null, code: string | null): Response {
  return Response.json({ error: { message, type: "invalid_request_error", param, code } }, { status: 400 });
}

const ROLES = ["system", "developer", "user", "assistant", "tool", "function"];
const PART_TYPES = ["text", "image_url", "input_audio", "refusal", "audio", "file"];
const DATA_URL = /^data:(image\/(?:png|jpeg|gif|webp));base64,[A-Za-z0-9+/]+=*$/;

/**
 * The checks OpenAI's chat-completions API makes of `messages` that an a2a-node request can reach: a
 * non-empty array; known roles; content a string or an array of typed parts; text parts with text;
 * image_url parts with an object holding an http(s) URL or a base64 data: URL of an image type; and, for a
 * model without vision, no image_url at all. The wording follows the API's answers.
 */
function checkMessages(messages: unknown, vision: boolean): Response | undefined {
  if (!Array.isArray(messages) || messages.length === 0)
    return invalidRequest(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages",
      "empty_array",
    );
  for (const [i, m] of messages.entries()) {
    if (!ROLES.includes(m?.role))
      return invalidRequest(
        `Invalid value: '${m?.role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        "invalid_value",
      );
    if (typeof m.content === "string") continue;
    if (!Array.isArray(m.content))
      return invalidRequest(
        `Invalid type for 'messages[${i}].content': expected one of a string or array of objects, but got ${typeof m.content} instead.`,
        `messages[${i}].content`,
        "invalid_type",
      );
    for (const [j, p] of (m.content as any[]).entries()) {
      if (!PART_TYPES.includes(p?.type))
        return invalidRequest(
          `Invalid value: '${p?.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`,
          `messages[${i}].content[${j}].type`,
          "invalid_value",
        );
      if (p.type === "text" && typeof p.text !== "string")
        return invalidRequest(
          `Invalid type for 'messages[${i}].content[${j}].text': expected a string, but got ${typeof p.text} instead.`,
          `messages[${i}].content[${j}].text`,
          "invalid_type",
        );
      if (p.type !== "image_url") continue;
      if (m.role !== "user")
        return invalidRequest(
          `Invalid value: 'image_url'. Supported values are: 'text'${m.role === "assistant" ? " and 'refusal'" : ""}.`,
          `messages[${i}].content[${j}].type`,
          "invalid_value",
        );
      const url = p.image_url?.url;
      if (typeof url !== "string")
        return invalidRequest(
          `Missing required parameter: 'messages[${i}].content[${j}].image_url.url'.`,
          `messages[${i}].content[${j}].image_url.url`,
          "missing_required_parameter",
        );
      if (url.startsWith("data:") && !DATA_URL.test(url))
        return invalidRequest(
          `Invalid 'messages[${i}].content[${j}].image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type '${/^data:([^;,]*)/.exec(url)?.[1] ?? ""}'.`,
          `messages[${i}].content[${j}].image_url.url`,
          "invalid_value",
        );
      if (!url.startsWith("data:") && !/^https?:\/\//.test(url))
        return invalidRequest(
          `Invalid image URL: 'messages[${i}].content[${j}].image_url.url'.`,
          `messages[${i}].content[${j}].image_url.url`,
          "invalid_value",
        );
      if (!vision)
        return invalidRequest(
          "Invalid content type. image_url is only supported by certain models.",
          `messages.[${i}].content.[${j}].type`,
          null,
        );
    }
  }
  return undefined;
}
