import type { Socket } from "node:net";
import type { Server as TlsServer } from "node:tls";

/** How many connections a listener holds open, in all and per source address, before it refuses more. */
export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** The defaults of the handshake_timeout_seconds, max_connections and max_connections_per_address settings. */
export const CONNECTION_DEFAULTS = { handshakeTimeoutMs: 10_000, maxConnections: 1024, maxConnectionsPerAddress: 64 } as const;

export type RefusedConnection = "too many connections" | "too many connections from one address";

/**
 * Counts a listener's open connections (from the moment TCP is accepted, so connections still in their TLS
 * handshake count: those are the ones an unauthenticated client can open by the thousand) and closes at once
 * any beyond the limits. One address's flood then cannot take the slots others need.
 */
export class ConnectionGate {
  private open = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly onRefused?: (reason: RefusedConnection, remote: string | undefined) => void,
  ) {}

  /** Admits `socket` (true) and counts it until it closes, or destroys it (false). */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? "unknown";
    const fromAddress = this.perAddress.get(address) ?? 0;
    const reason: RefusedConnection | undefined =
      this.open >= this.limits.maxConnections
        ? "too many connections"
        : fromAddress >= this.limits.maxConnectionsPerAddress
          ? "too many connections from one address"
          : undefined;
    if (reason) {
      this.onRefused?.(reason, socket.remoteAddress);
      socket.destroy();
      return false;
    }
    this.open++;
    this.perAddress.set(address, fromAddress + 1);
    socket.once("close", () => {
      this.open--;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    return true;
  }

  /** Open connections now, in all and from `address`. */
  count(address?: string): number {
    return address === undefined ? this.open : (this.perAddress.get(address) ?? 0);
  }
}

/**
 * Bounds a TLS server's unauthenticated connections: counts them from TCP accept (refusing those over the
 * limits) and closes a socket whose handshake failed or timed out, which Bun, unlike Node, leaves open.
 * Returns the gate, for its counts.
 */
export function boundTlsServer(
  tls: TlsServer,
  o: {
    limits?: ConnectionLimits;
    onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
    onHandshakeError?(err: Error, remote: string | undefined): void;
  },
): ConnectionGate {
  const gate = new ConnectionGate(o.limits ?? CONNECTION_DEFAULTS, o.onRefusedConnection);
  // "connection" is the raw TCP socket, before any TLS: counting there bounds unauthenticated clients too.
  tls.on("connection", (socket) => gate.admit(socket));
  tls.on("tlsClientError", (err, socket) => {
    socket.destroy();
    o.onHandshakeError?.(err, socket.remoteAddress);
  });
  return gate;
}
