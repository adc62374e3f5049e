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
 * - fleet: mutual TLS with our fleet CA; the certificate must be issued to a node by it and carry the peer's
 *   name (and match its pin, if any).
 * - system: an agent outside the fleet, verified by host name against the runtime's CA store; no client
 *   certificate is presented.
 * - ca: the same, against the CA certificate(s) in `caFile` instead of the store.
 */
export type PeerTrust = { kind: "fleet" } | { kind: "system" } | { kind: "ca"; caFile: string };

/**
 * A known peer: its name (for a fleet peer, the fleet name its certificate must carry), where it listens, and
 * how it is reached. A fleet peer may be pinned: by its public key (`keyPin`, which its renewals keep), or, for
 * peers pinned before key pins, by one certificate (`fingerprint`), which is converted to a key pin the next
 * time the peer is contacted.
 */
export interface Peer {
  name: string;
  url: string;
  /** The pinned public key, `spki:sha256:...` (pki/key-pin.ts). */
  keyPin?: string;
  /** An older pin: the SHA-256 fingerprint (AA:BB:...) of one certificate of the peer. */
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
  /** Replaces the pin of `name` by a key pin (an older certificate pin converted on contact); false if no such peer. */
  pinKey(name: string, keyPin: string): boolean;
}
