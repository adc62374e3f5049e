import type { Server as NetServer, Socket } from "node:net";
import type { Server as TlsServer } from "node:tls";
import { sourceOf } from "./source-address";

/** How many connections a listener holds open, in all, per source and not yet authenticated, before it acts. */
export interface ConnectionLimits {
  maxConnections: number;
  /** Of those, from one source: an IPv4 address, or an IPv6 /64 (see source-address.ts). */
  maxConnectionsPerAddress: number;
  /**
   * Of those, how many may be unauthenticated at once (a TLS handshake in progress; on the token listener, no
   * valid token yet). Absent: a connection counts as authenticated from its accept (the loopback listeners,
   * whose every caller is this machine). Lower than maxConnections, it bounds what strangers hold, at a cost:
   * a flood's connections are then evicted sooner and reconnect, and more of them wait in the kernel's accept
   * queue (Bun fixes its length at 512), where a member's connection waits behind them.
   */
  maxHandshakes?: number;
}

/**
 * The defaults of the handshake_timeout_seconds, max_connections, max_connections_per_address and max_handshakes
 * settings.
 */
export const CONNECTION_DEFAULTS = {
  handshakeTimeoutMs: 10_000,
  maxConnections: 1024,
  maxConnectionsPerAddress: 64,
  maxHandshakes: 1024,
} as const;

export type RefusedConnection = "too many connections" | "too many connections from one address" | typeof EVICTED;

/** Why an unauthenticated connection was closed to make room for a new one. */
export const EVICTED =
  "evicted: an unauthenticated connection closed to make room for a new one (its source held the most)";

interface Held {
  source: string;
  /** Not authenticated yet: it can be evicted. */
  pending: boolean;
  released: boolean;
}

/**
 * Counts a listener's open connections from the moment TCP is accepted (so connections still in their TLS
 * handshake count: those are the ones a client without a certificate can open by the thousand), and keeps
 * strangers from taking the slots fleet members need:
 *
 * - at most maxConnectionsPerAddress from one source (an IPv6 /64 is one source); more are closed at once;
 * - unauthenticated connections are evictable: when the listener is full (maxConnections), or holds
 *   maxHandshakes unauthenticated ones, a new connection takes the place of the oldest unauthenticated one of
 *   the source holding the most. A flood from a few sources thus only ever evicts itself, and a fleet member's
 *   handshake, one of one from its source, goes through; only authenticated connections can fill the
 *   listener, and then a new one is closed at once.
 */
export class ConnectionGate {
  private open = 0;
  private unauthenticated = 0;
  private readonly perSource = new Map<string, number>();
  /** Unauthenticated connections by source, each set oldest first (insertion order). */
  private readonly pendingBySource = new Map<string, Set<Socket>>();
  private readonly held = new WeakMap<Socket, Held>();
  /** Sockets this gate closed (refused or evicted): their failed handshake is not a refusal of its own. */
  private readonly closed = new WeakSet<Socket>();

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly onRefused?: (reason: RefusedConnection, remote: string | undefined) => void,
  ) {}

  /** Admits `socket` (true) and counts it until it closes, or destroys it (false); may evict another to make room. */
  admit(socket: Socket): boolean {
    const source = sourceOf(socket.remoteAddress);
    const { maxConnections, maxConnectionsPerAddress, maxHandshakes } = this.limits;
    let refused: RefusedConnection | undefined;
    if ((this.perSource.get(source) ?? 0) >= maxConnectionsPerAddress)
      refused = "too many connections from one address";
    else if (this.open >= maxConnections || (maxHandshakes !== undefined && this.unauthenticated >= maxHandshakes)) {
      const victim = this.evictable();
      if (victim) this.evict(victim);
      else refused = "too many connections";
    }
    if (refused) {
      this.onRefused?.(refused, socket.remoteAddress);
      this.closed.add(socket);
      socket.destroy();
      return false;
    }
    const entry: Held = { source, pending: maxHandshakes !== undefined, released: false };
    this.held.set(socket, entry);
    this.open++;
    this.perSource.set(source, (this.perSource.get(source) ?? 0) + 1);
    if (entry.pending) {
      this.unauthenticated++;
      let set = this.pendingBySource.get(source);
      if (!set) this.pendingBySource.set(source, (set = new Set()));
      set.add(socket);
    }
    socket.once("close", () => this.release(socket));
    return true;
  }

  /** The connection proved who it is (a fleet certificate, a valid token): it is no longer evictable. */
  authenticated(socket: Socket): void {
    const entry = this.held.get(socket);
    if (!entry || !entry.pending || entry.released) return;
    entry.pending = false;
    this.unpend(socket, entry.source);
  }

  /** Open connections now, in all, or from `address`'s source. */
  count(address?: string): number {
    return address === undefined ? this.open : (this.perSource.get(sourceOf(address)) ?? 0);
  }

  /** Whether this gate closed `socket` (refused or evicted it). */
  closedHere(socket: Socket): boolean {
    return this.closed.has(socket);
  }

  /** Unauthenticated connections open now. */
  handshakes(): number {
    return this.unauthenticated;
  }

  /** The oldest unauthenticated connection of the source holding the most of them (the first such source on a tie). */
  private evictable(): Socket | undefined {
    let most: Set<Socket> | undefined;
    for (const set of this.pendingBySource.values()) if (!most || set.size > most.size) most = set;
    return most?.values().next().value;
  }

  private evict(victim: Socket): void {
    // Its slot is free now, not when its close event comes: the new connection takes it at once.
    this.release(victim);
    this.onRefused?.(EVICTED, victim.remoteAddress);
    this.closed.add(victim);
    victim.destroy();
  }

  private release(socket: Socket): void {
    const entry = this.held.get(socket);
    if (!entry || entry.released) return;
    entry.released = true;
    this.open--;
    const left = (this.perSource.get(entry.source) ?? 1) - 1;
    if (left > 0) this.perSource.set(entry.source, left);
    else this.perSource.delete(entry.source);
    if (entry.pending) this.unpend(socket, entry.source);
  }

  private unpend(socket: Socket, source: string): void {
    const set = this.pendingBySource.get(source);
    if (!set?.delete(socket)) return;
    this.unauthenticated--;
    if (set.size === 0) this.pendingBySource.delete(source);
  }
}

/**
 * Bounds a TLS server's connections: counts them from TCP accept (ConnectionGate) and closes a socket whose
 * handshake failed or timed out, which Bun, unlike Node, leaves open. Returns the gate: the listener tells it
 * when a connection has authenticated. (Under Bun the socket of "connection" is the very TLSSocket of
 * "secureConnection", so the gate knows it again.)
 */
export function boundTlsServer(
  tls: TlsServer,
  o: {
    limits?: ConnectionLimits;
    onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
    onHandshakeError?(err: Error, remote: string | undefined): void;
  },
): ConnectionGate {
  const gate = boundServer(tls, o);
  tls.on("tlsClientError", (err, socket) => {
    socket.destroy();
    // A connection the gate closed has been counted and logged once already, with its reason.
    if (!gate.closedHere(socket)) o.onHandshakeError?.(err, socket.remoteAddress);
  });
  return gate;
}

/** Counts a plain TCP server's connections from accept (ConnectionGate), closing those over the limits. */
export function boundServer(
  server: NetServer,
  o: { limits?: ConnectionLimits; onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void },
): ConnectionGate {
  const gate = new ConnectionGate(o.limits ?? CONNECTION_DEFAULTS, o.onRefusedConnection);
  // "connection" is the raw TCP socket, before any TLS: counting there bounds unauthenticated clients too.
  // Registered first, so a refused socket is destroyed before any other listener of the event sees it.
  server.prependListener("connection", (socket: Socket) => void gate.admit(socket));
  return gate;
}
