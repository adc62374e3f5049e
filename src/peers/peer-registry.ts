/**
 * A known peer: its name (the fleet name its certificate must carry), where it listens, and optionally a pin.
 * A pin is of the peer's public key (`keyPin`, which its renewals keep), or, for peers pinned before key pins,
 * of one certificate (`fingerprint`), which is converted to a key pin the next time the peer is contacted.
 */
export interface Peer {
  name: string;
  url: string;
  /** The pinned public key, `spki:sha256:...` (pki/key-pin.ts). */
  keyPin?: string;
  /** An older pin: the SHA-256 fingerprint (AA:BB:...) of one certificate of the peer. */
  fingerprint?: string;
  addedAt: string;
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
