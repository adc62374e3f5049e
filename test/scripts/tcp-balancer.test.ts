import { afterEach, describe, expect, it } from "vitest";
import type { TCPSocketListener } from "bun";
import { startBalancer, type Balancer } from "../../scripts/tcp-balancer";

// The balancer that `npm run replicas` and `npm run bench:replicas` put in front of the replicas: connections
// go to the backends in turn, and bytes pass through untouched both ways (TLS must reach the replica).
const servers: TCPSocketListener<unknown>[] = [];
let balancer: Balancer | undefined;
afterEach(() => {
  balancer?.stop();
  for (const s of servers.splice(0)) s.stop(true);
});

/** A backend that answers each connection with its name, then echoes every byte back. */
function backend(name: string): number {
  const s = Bun.listen<{ backlog: Uint8Array[] }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(sock) {
        sock.data = { backlog: [] };
        sock.write(`${name}:`);
      },
      data(sock, chunk) {
        const copy = new Uint8Array(chunk);
        if (sock.data.backlog.length) return void sock.data.backlog.push(copy);
        const n = sock.write(copy);
        if (n < copy.length) sock.data.backlog.push(copy.subarray(Math.max(n, 0)));
      },
      drain(sock) {
        while (sock.data.backlog.length) {
          const c = sock.data.backlog[0]!;
          const n = sock.write(c);
          if (n < c.length) return void (sock.data.backlog[0] = c.subarray(Math.max(n, 0)));
          sock.data.backlog.shift();
        }
      },
    },
  });
  servers.push(s as TCPSocketListener<unknown>);
  return s.port;
}

/** Connects through the balancer, sends `payload`, and resolves with everything received until `expect` bytes came. */
function roundTrip(port: number, payload: Uint8Array, expectBytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const got: Uint8Array[] = [];
    let n = 0;
    let sent = 0;
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(sock) {
          sent = sock.write(payload);
        },
        drain(sock) {
          if (sent < payload.length) sent += sock.write(payload.subarray(sent));
        },
        data(sock, chunk) {
          got.push(new Uint8Array(chunk));
          n += chunk.length;
          if (n >= expectBytes) {
            sock.end();
            resolve(Buffer.concat(got));
          }
        },
        error: (_s, err) => reject(err),
      },
    });
  });
}

describe("tcp-balancer", () => {
  it("sends connections to the backends in turn and passes a large payload through intact, both ways", async () => {
    balancer = startBalancer(
      0,
      [backend("a"), backend("b")].map((port) => ({ host: "127.0.0.1", port })),
    );
    const payload = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 31) % 251); // past any socket buffer
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await roundTrip(balancer.port, payload, 2 + payload.length));
    expect(answers.map((a) => String.fromCharCode(a[0]!))).toEqual(["a", "b", "a", "b"]);
    for (const a of answers) expect(Buffer.compare(Buffer.from(a.subarray(2)), Buffer.from(payload))).toBe(0);
  });

  it("closes a client's connection when its backend is down", async () => {
    const dead = backend("dead");
    servers.pop()!.stop(true);
    balancer = startBalancer(0, [{ host: "127.0.0.1", port: dead }]);
    const closed = await new Promise<boolean>((resolve) => {
      void Bun.connect({
        hostname: "127.0.0.1",
        port: balancer!.port,
        socket: { data() {}, close: () => resolve(true), error: () => resolve(true) },
      });
    });
    expect(closed).toBe(true);
  });
});
