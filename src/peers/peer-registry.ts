/**
 * How an outside peer's credentials are sent. Only the file's path is kept: the secret is read from it at each
 * use, so rotating it needs no re-add and the database never holds it.
 * - bearer: the file holds the token; sent as `Authorization: Bearer <token>`.
 * - header: the file holds one `Name: value` line; sent as that header.
 */
export interface PeerAuth {
  kind: "bearer" | "header";
  file: string;
}

/**
 * How the server's certificate is judged.
 * - fleet: mutual TLS with our fleet CA; the certificate's CN must be the peer's name (and its pin, if any).
 * - system: an agent outside the fleet, verified by host name against the runtime's CA store; no client
 *   certificate is presented.
 * - ca: the same, against the CA certificate(s) in `caFile` instead of the store.
 */
export type PeerTrust = { kind: "fleet" } | { kind: "system" } | { kind: "ca"; caFile: string };

/** A known peer: its name (the CN its certificate must carry, for a fleet peer), where it listens, and how. */
export interface Peer {
  name: string;
  url: string;
  /** SHA-256 fingerprint (AA:BB:...) the peer's certificate must have, if pinned (fleet peers). */
  fingerprint?: string;
  /** Absent: a fleet peer (mutual TLS). */
  trust?: PeerTrust;
  /** Credentials for an outside peer, if it asks for any. */
  auth?: PeerAuth;
  /** Plain http:// to a host other than this machine was allowed with --insecure-http. */
  insecureHttp?: boolean;
  addedAt: string;
}

/** True for a peer outside the fleet (no mutual TLS with our CA). */
export function isOutsidePeer(peer: Pick<Peer, "trust">): boolean {
  return peer.trust !== undefined && peer.trust.kind !== "fleet";
}

/** Names to URLs and pinned identities, kept in the node's database. */
export interface PeerRegistry {
  add(peer: Omit<Peer, "addedAt">, options?: { replace?: boolean }): Peer;
  get(name: string): Peer | undefined;
  list(): Peer[];
  remove(name: string): boolean;
}
