/**
 * Reads one SSE stream from a node over mTLS and reports what arrived: events, events/s, and the latency of
 * each artifact chunk (receive time minus the emit time the chunk carries).
 *   bun scripts/bench/stream-client.ts '{"url":..., "bundle":..., "method":"SendStreamingMessage"|"SubscribeToTask",
 *   "params":{...}, "lastEventId"?: "0"}'
 * Prints one JSON line: {events, chunks, ms, eventsPerSecond, latenciesMs: number[] (sampled), lastId, final}.
 */
import { clientTls, readBundle } from "./rpc";

const cfg = JSON.parse(process.argv[2]) as {
  url: string;
  bundle: string;
  method: string;
  params: unknown;
  lastEventId?: string;
};
const tls = clientTls(readBundle(cfg.bundle));
const wallMs = () => performance.timeOrigin + performance.now();
const headers: Record<string, string> = {
  "content-type": "application/json",
  "a2a-version": "1.0",
  accept: "text/event-stream",
};
if (cfg.lastEventId !== undefined) headers["last-event-id"] = cfg.lastEventId;
const started = performance.now();
const res = await fetch(cfg.url, {
  method: "POST",
  headers,
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: cfg.method, params: cfg.params }),
  tls,
} as RequestInit);
if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
let events = 0;
let chunks = 0;
let lastId = "";
let final = "";
const latencies: number[] = [];
let buf = "";
const dec = new TextDecoder();
for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
  const now = wallMs();
  buf += dec.decode(part, { stream: true });
  let cut: number;
  while ((cut = buf.indexOf("\n\n")) !== -1) {
    const block = buf.slice(0, cut);
    buf = buf.slice(cut + 2);
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) lastId = line.slice(4);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (!data) continue;
    events++;
    const msg = JSON.parse(data);
    if (msg.error) throw new Error(JSON.stringify(msg.error));
    const u = msg.result.artifactUpdate;
    if (u) {
      chunks++;
      const sent = Number.parseFloat(u.artifact.parts[0].text);
      if (Number.isFinite(sent)) latencies.push(now - sent);
    } else if (msg.result.statusUpdate) final = msg.result.statusUpdate.status.state;
  }
}
const ms = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({ events, chunks, ms, eventsPerSecond: (events / ms) * 1000, latenciesMs: latencies, lastId, final })}\n`,
);
