/**
 * A fake OpenAI-compatible model for the token benchmark: streams chat-completion chunks whose content is
 * "<index>@<emit time in ms> ", so a client can check order and completeness and measure each token's
 * latency. The user message says how: "tokens=N pace=MS" (pace 0 = as fast as the socket takes them).
 *   bun scripts/bench/token-model.ts PORT
 */
const port = Number(process.argv[2]);
const wallMs = () => performance.timeOrigin + performance.now();
const enc = new TextEncoder();

Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(req) {
    if (new URL(req.url).pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
    const body = (await req.json()) as { messages: { role: string; content: string }[] };
    const text = body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
    const n = Number(/tokens=(\d+)/.exec(text)?.[1] ?? 100);
    const pace = Number(/pace=([\d.]+)/.exec(text)?.[1] ?? 0);
    const stream = new ReadableStream<Uint8Array>({
      async start(c) {
        for (let i = 0; i < n; i++) {
          if (req.signal.aborted) break;
          const chunk = {
            id: "b",
            object: "chat.completion.chunk",
            choices: [{ index: 0, delta: { content: `${i}@${wallMs().toFixed(3)} ` } }],
          };
          c.enqueue(enc.encode(`data: ${JSON.stringify(chunk)}\n\n`));
          if (pace > 0) await Bun.sleep(pace);
          else if (i % 64 === 63) await new Promise((r) => setImmediate(r));
        }
        c.enqueue(
          enc.encode(
            `data: ${JSON.stringify({ id: "b", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { completion_tokens: n } })}\n\n`,
          ),
        );
        c.enqueue(enc.encode("data: [DONE]\n\n"));
        c.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  },
});
process.stdout.write("listening\n");
