/**
 * Streams tokens either straight from the fake model ("direct") or through an a2a-node
 * (SendStreamingMessage over mTLS), and reports per-token latency (receive - emit), the first token's delay
 * from the request, tokens/s, and whether every token arrived once, in order.
 *   bun scripts/bench/token-client.ts '{"mode":"direct"|"node","url":...,"bundle"?:...,"text":"tokens=N
 *   pace=MS","streams"?:1}'
 */
import { readNamedSse } from "../../src/sse";
import { clientTls, readBundle } from "./rpc";

const cfg = JSON.parse(process.argv[2]) as {
  mode: "direct" | "node";
  url: string;
  bundle?: string;
  text: string;
  streams?: number;
};
const wallMs = () => performance.timeOrigin + performance.now();
const tls = cfg.bundle ? clientTls(readBundle(cfg.bundle)) : undefined;

/** One stream's measurements, as printed (JSON) for the orchestrator. */
export interface One {
  latencies: number[];
  firstTokenMs: number;
  tokens: number;
  inOrder: boolean;
  ms: number;
}

async function one(text = cfg.text): Promise<One> {
  const started = wallMs();
  const res =
    cfg.mode === "direct"
      ? await fetch(`${cfg.url}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "bench", stream: true, messages: [{ role: "user", content: text }] }),
        })
      : await fetch(cfg.url, {
          method: "POST",
          headers: { "content-type": "application/json", "a2a-version": "1.0", accept: "text/event-stream" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendStreamingMessage",
            params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } },
          }),
          tls,
        } as RequestInit);
  const latencies: number[] = [];
  let first = -1;
  let next = 0;
  let inOrder = true;
  for await (const { data } of readNamedSse(res.body as ReadableStream<Uint8Array>)) {
    const now = wallMs();
    if (data === "[DONE]") break;
    const msg = JSON.parse(data);
    const text: string | undefined =
      cfg.mode === "direct" ? msg.choices?.[0]?.delta?.content : msg.result?.artifactUpdate?.artifact?.parts?.[0]?.text;
    if (!text) continue;
    for (const tok of text.split(" ").filter(Boolean)) {
      const [i, t] = tok.split("@");
      if (Number(i) !== next) inOrder = false;
      next = Number(i) + 1;
      latencies.push(now - Number(t));
      if (first < 0) first = now - started;
    }
  }
  return { latencies, firstTokenMs: first, tokens: next, inOrder, ms: wallMs() - started };
}

// One short stream first, so both paths are measured on a warm connection (TLS set up, code paths hot),
// as a node delegating many tasks to a peer would be.
await one("tokens=5 pace=0");
const runs = await Promise.all(Array.from({ length: cfg.streams ?? 1 }, () => one()));
process.stdout.write(`${JSON.stringify(runs)}\n`);
