/**
 * A TCP load balancer for trying replicas locally: each connection goes to the next backend in turn, and its
 * bytes are passed through untouched, so TLS (and the client's certificate) reaches the replica; nothing here
 * terminates or reads it. Production would use HAProxy (`mode tcp`), nginx (`stream`) or a cloud TCP/L4
 * balancer in the same way (see README "Postgres: one agent, several replicas").
 *
 *   bun scripts/tcp-balancer.ts LISTEN_PORT HOST:PORT [HOST:PORT...]
 */
import type { Socket, TCPSocketListener } from "bun";

export interface Balancer {
  port: number;
  stop(): void;
}

interface Pair {
  peer?: Socket<Pair>;
  /** Bytes from the client that came before the backend connection was open. */
  early: Uint8Array[];
  /** Bytes this socket could not take yet (it is written again on drain). */
  backlog: Uint8Array[];
  closed?: boolean;
}

/** Writes all of `chunk`, keeping what the socket does not take now for its next drain. */
function send(socket: Socket<Pair>, chunk: Uint8Array): void {
  if (socket.data.backlog.length) return void socket.data.backlog.push(new Uint8Array(chunk));
  const n = socket.write(chunk);
  if (n < chunk.length) socket.data.backlog.push(new Uint8Array(chunk.subarray(Math.max(n, 0))));
}

function drain(socket: Socket<Pair>): void {
  const backlog = socket.data.backlog;
  while (backlog.length) {
    const chunk = backlog[0]!;
    const n = socket.write(chunk);
    if (n < chunk.length) {
      backlog[0] = chunk.subarray(Math.max(n, 0));
      return;
    }
    backlog.shift();
  }
}

export function startBalancer(
  listenPort: number,
  backends: { host: string; port: number }[],
  host = "127.0.0.1",
): Balancer {
  if (backends.length === 0) throw new Error("the balancer needs at least one backend");
  let next = 0;
  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: host,
    port: listenPort,
    socket: {
      open(client) {
        client.data = { early: [], backlog: [] };
        const target = backends[next++ % backends.length]!;
        void Bun.connect<Pair>({
          hostname: target.host,
          port: target.port,
          socket: {
            open(backend) {
              backend.data = { peer: client, early: [], backlog: [] };
              if (client.data.closed) return void backend.end();
              client.data.peer = backend;
              for (const chunk of client.data.early) send(backend, chunk);
              client.data.early = [];
            },
            data: (backend, chunk) => void (backend.data.peer && send(backend.data.peer, chunk)),
            drain,
            close: (backend) => void backend.data.peer?.end(),
            error: (backend) => void backend.data.peer?.end(),
          },
        }).catch(() => client.end()); // the backend is down: the client's connection is refused in turn
      },
      data(client, chunk) {
        if (client.data.peer) send(client.data.peer, chunk);
        else client.data.early.push(new Uint8Array(chunk));
      },
      drain,
      close(client) {
        client.data.closed = true;
        client.data.peer?.end();
      },
      error: (client) => void client.data.peer?.end(),
    },
  });
  return { port: listener.port, stop: () => listener.stop(true) };
}

if (import.meta.main) {
  const [port, ...targets] = process.argv.slice(2);
  if (!port || targets.length === 0) {
    console.error("usage: bun scripts/tcp-balancer.ts LISTEN_PORT HOST:PORT [HOST:PORT...]");
    process.exit(2);
  }
  const b = startBalancer(
    Number(port),
    targets.map((t) => {
      const i = t.lastIndexOf(":");
      return { host: t.slice(0, i), port: Number(t.slice(i + 1)) };
    }),
  );
  console.log(`balancing 127.0.0.1:${b.port} over ${targets.join(", ")} (TLS passed through)`);
}
