/** A known peer: its name (the CN its certificate must carry), where it listens, and optionally a pin. */
export interface Peer {
  name: string;
  url: string;
  /** SHA-256 fingerprint (AA:BB:...) the peer's certificate must have, if pinned. */
  fingerprint?: string;
  addedAt: string;
}

/** Names to URLs and pinned identities, kept in the node's database. */
export interface PeerRegistry {
  add(peer: Omit<Peer, "addedAt">, options?: { replace?: boolean }): Peer;
  get(name: string): Peer | undefined;
  list(): Peer[];
  remove(name: string): boolean;
}
