/**
 * An OpenAI-compatible chat-completions fake (like startFakeModel in ./openai) that holds only SOME
 * requests: those whose last user message `holdIf` accepts. Each held request waits until the test releases
 * it (by a substring of its text, or all of them), so one node can have tasks that finish at once and tasks
 * that stay running, side by side, without timers.
 */
import { Conditions } from "../helpers/until";

export interface GatedModelRequest {
  /** The last user message's content. */
  text: string;
  body: any;
  headers: Record<string, string>;
  /** Settles when the client (the node) aborted this request. */
  aborted: Promise<void>;
  wasAborted: boolean;
  /** True once the model answered this request (all of it). */
  answered: boolean;
  /** The answer chunks sent so far (streamed answers). */
  chunksSent: number;
}

export interface GatedModelOptions {
  /** Which requests to hold, by the last user message's text. Default: those containing "[hold]". */
  holdIf?: (text: string) => boolean;
  /** The answer text. Default: "echo: <text>". */
  reply?: (text: string) => string;
  /**
   * For streamed answers (`stream: true`, as real servers do it: SSE chunks, one per word): how many chunks a
   * held request sends before it waits for release. 0 (default): it waits before answering at all.
   */
  holdAfterChunks?: number;
}

export interface GatedModel {
  url: string;
  requests: GatedModelRequest[];
  /** Resolves when at least n requests (held or not) have arrived. */
  received(n: number): Promise<void>;
  /** Resolves with the request whose text contains `needle`, once it has arrived. */
  arrival(needle: string): Promise<GatedModelRequest>;
  /** Resolves once `n` requests whose text contains `needle` have arrived (a task asked again, after a restart). */
  arrivals(needle: string, n: number): Promise<void>;
  /** Resolves once the request whose text contains `needle` has been sent at least `n` answer chunks. */
  chunks(needle: string, n: number): Promise<void>;
  /** Lets held requests whose text contains `needle` go (all held ones, and every later one, without it). */
  release(needle?: string): void;
  stop(): void;
}

export function startGatedModel(options: GatedModelOptions = {}): GatedModel {
  const holdIf = options.holdIf ?? ((t: string) => t.includes("[hold]"));
  const reply = options.reply ?? ((t: string) => `echo: ${t}`);
  const requests: GatedModelRequest[] = [];
  const held: { text: string; go: () => void }[] = [];
  const conditions = new Conditions();
  let releasedAll = false;

  const wake = conditions.changed;
  const until = (ready: () => boolean): Promise<void> => conditions.until(ready).then(() => {});

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions")
        return Response.json({ error: { message: "not found" } }, { status: 404 });
      const body = (await req.json()) as any;
      const messages = body.messages as { role: string; content: string }[];
      const text = messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      let onAbort!: () => void;
      const record: GatedModelRequest = {
        text,
        body,
        headers,
        aborted: new Promise<void>((r) => (onAbort = r)),
        wasAborted: false,
        answered: false,
        chunksSent: 0,
      };
      req.signal.addEventListener("abort", () => {
        record.wasAborted = true;
        onAbort();
      });
      requests.push(record);
      wake();
      const hold = !releasedAll && holdIf(text);
      const gate = () => new Promise<void>((go) => held.push({ text, go }));
      const holdAfter = options.holdAfterChunks ?? 0;
      if (hold && !(body.stream && holdAfter > 0)) await gate();
      const answer = reply(text);
      if (body.stream) {
        const words = answer.split(/(?<= )/);
        const enc = new TextEncoder();
        const sse = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
        const chunk = (content: string) => ({
          id: "c1",
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta: { content } }],
        });
        return new Response(
          new ReadableStream({
            async start(c) {
              for (let i = 0; i < words.length; i++) {
                if (hold && holdAfter > 0 && i === holdAfter) await gate();
                if (record.wasAborted) return;
                c.enqueue(sse(chunk(words[i]!)));
                record.chunksSent++;
                wake();
              }
              c.enqueue(
                sse({
                  id: "c1",
                  object: "chat.completion.chunk",
                  choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
                }),
              );
              c.enqueue(
                sse({
                  id: "c1",
                  object: "chat.completion.chunk",
                  choices: [],
                  usage: { prompt_tokens: 7, completion_tokens: words.length, total_tokens: 7 + words.length },
                }),
              );
              c.enqueue(enc.encode("data: [DONE]\n\n"));
              record.answered = true;
              c.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      record.answered = true;
      return Response.json({
        id: "chatcmpl-gated",
        object: "chat.completion",
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: answer }, finish_reason: "stop" }],
        usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
      });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    requests,
    received: (n) => until(() => requests.length >= n),
    async arrival(needle) {
      await until(() => requests.some((r) => r.text.includes(needle)));
      return requests.find((r) => r.text.includes(needle))!;
    },
    arrivals: (needle, n) => until(() => requests.filter((r) => r.text.includes(needle)).length >= n),
    chunks: (needle, n) => until(() => requests.some((r) => r.text.includes(needle) && r.chunksSent >= n)),
    release(needle) {
      if (needle === undefined) releasedAll = true;
      for (let i = held.length - 1; i >= 0; i--) {
        if (needle === undefined || held[i]!.text.includes(needle)) held.splice(i, 1)[0]!.go();
      }
    },
    stop: () => {
      releasedAll = true;
      for (const h of held.splice(0)) h.go();
      void server.stop(true);
    },
  };
}
