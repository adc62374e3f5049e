/**
 * The idle side of bench-idle-streams.ts, in a process of its own (with its own descriptor limit): opens one
 * connection per task id, sends SubscribeToTask (JSON-RPC, SSE answer) on it, and counts it ready once the
 * stream's first event (the task as stored) has arrived. Prints {"ready","failed","ms"} once all are settled,
 * then holds every stream open, reading what comes (keep-alive comments), and prints
 * {"open","closed","bytes"} for each line "status" on stdin. Exits when stdin closes.
 *   bun idle-subscribers.ts '{"port":N,"tls":{...}|null,"ids":"FILE","parallel":200}'
 */
import { readFileSync } from "node:fs";
import { connect as tcp, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

const cfg = JSON.parse(process.argv[2]!) as {
  port: number;
  tls: { cert: string; key: string; ca: string } | null;
  ids: string;
  parallel: number;
};
const ids = readFileSync(cfg.ids, "utf8").split("\n").filter(Boolean);
const sockets: Socket[] = [];
let ready = 0;
let failed = 0;
let closed = 0;
let bytes = 0;
const firstError: string[] = [];

function open(id: string): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (ok: boolean, why?: string) => {
      if (settled) return;
      settled = true;
      if (ok) ready++;
      else {
        failed++;
        if (why && firstError.length < 3) firstError.push(why);
      }
      resolve();
    };
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id } });
    const request = `POST / HTTP/1.1\r\nhost: 127.0.0.1:${cfg.port}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\na2a-version: 1.0\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const socket: Socket = cfg.tls
      ? tlsConnect(
          {
            host: "127.0.0.1",
            port: cfg.port,
            cert: cfg.tls.cert,
            key: cfg.tls.key,
            ca: cfg.tls.ca,
            servername: "localhost",
            checkServerIdentity: () => undefined,
          },
          () => socket.write(request),
        )
      : tcp({ host: "127.0.0.1", port: cfg.port }, () => socket.write(request));
    let head = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      bytes += chunk.length;
      if (settled) return;
      head += chunk;
      if (!head.startsWith("HTTP/1.1 200")) {
        if (head.includes("\r\n")) done(false, head.slice(0, 200));
        return;
      }
      if (head.includes("\ndata:") || head.includes("\r\ndata:")) done(true);
    });
    socket.on("error", (err) => done(false, err.message));
    socket.on("close", () => {
      if (settled) closed++;
      done(false, "closed before its first event");
    });
    sockets.push(socket);
  });
}

const t0 = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: cfg.parallel }, async () => {
    while (next < ids.length) await open(ids[next++]!);
  }),
);
console.log(JSON.stringify({ ready, failed, ms: Math.round(performance.now() - t0), errors: firstError }));

let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  buffered += chunk;
  while (buffered.includes("\n")) {
    const line = buffered.slice(0, buffered.indexOf("\n"));
    buffered = buffered.slice(buffered.indexOf("\n") + 1);
    if (line === "status") console.log(JSON.stringify({ open: ready - closed, closed, bytes }));
  }
});
process.stdin.on("end", () => {
  for (const s of sockets) s.destroy();
  process.exit(0);
});
