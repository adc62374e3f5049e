export interface FakeModelRequest {
  path: string;
  headers: Record<string, string>;
  body: any;
}

export interface FakeModelOptions {
  /** What the model says, given the chat messages it received. Default: "echo: <last user message>". */
  reply?: (messages: { role: string; content: string }[]) => string;
  /** Answer with this HTTP status and body instead. */
  fail?: { status: number; body: string };
  /** Hold every answer until the test calls release() (a slow model, without timers in the test). */
  hold?: boolean;
}

export interface FakeModel {
  url: string;
  requests: FakeModelRequest[];
  /** Lets held answers go. */
  release(): void;
  /** Resolves when the n-th request (1-based) has arrived. */
  received(n: number): Promise<void>;
  /** Resolves when a request's connection was aborted by the client. */
  aborted(): Promise<void>;
  stop(): void;
}

/**
 * An OpenAI-compatible chat-completions server on loopback that behaves like the real ones: JSON answers with
 * choices/usage, SSE chunks when `stream: true`, HTTP errors, and slow answers.
 */
export function startFakeModel(options: FakeModelOptions = {}): FakeModel {
  const requests: FakeModelRequest[] = [];
  const arrivals: { n: number; resolve(): void }[] = [];
  const abortWaiters: (() => void)[] = [];
  let releaseAll: () => void = () => {};
  let released = !options.hold;
  const gate = new Promise<void>((r) => (releaseAll = r));

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions")
        return Response.json({ error: { message: "not found" } }, { status: 404 });
      const body = (await req.json()) as any;
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      requests.push({ path: url.pathname, headers, body });
      for (const a of arrivals.filter((a) => a.n <= requests.length)) a.resolve();
      req.signal.addEventListener("abort", () => abortWaiters.splice(0).forEach((w) => w()));
      if (!released) await gate;
      if (options.fail) return new Response(options.fail.body, { status: options.fail.status });
      const messages = body.messages as { role: string; content: string }[];
      const text = options.reply ? options.reply(messages) : `echo: ${messages.filter((m) => m.role === "user").at(-1)?.content}`;
      const usage = { prompt_tokens: 7, completion_tokens: text.split(" ").length, total_tokens: 7 + text.split(" ").length };
      if (body.stream) {
        const words = text.split(/(?<= )/);
        const enc = new TextEncoder();
        const stream = new ReadableStream({
          start(c) {
            for (const w of words)
              c.enqueue(enc.encode(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: w } }] })}\n\n`));
            c.enqueue(enc.encode(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage })}\n\n`));
            c.enqueue(enc.encode("data: [DONE]\n\n"));
            c.close();
          },
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream" } });
      }
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        usage,
      });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    requests,
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
    stop: () => void server.stop(true),
  };
}
