import { asc, eq } from "drizzle-orm";
import type { Peer, PeerRegistry } from "../peers/peer-registry";
import { isKeyPin } from "../../pki/key-pin";
import type { Db } from "./database";
import { peers } from "./schema";

export class PeerExistsError extends Error {
  constructor(readonly peer: Peer) {
    super(`peer '${peer.name}' already exists (${peer.url})`);
  }
}

export class SqlitePeerRegistry implements PeerRegistry {
  constructor(private readonly db: Db) {}

  add(peer: Omit<Peer, "addedAt">, options: { replace?: boolean } = {}): Peer {
    return this.db.transaction(() => {
      const existing = this.get(peer.name);
      if (existing && !options.replace) throw new PeerExistsError(existing);
      // One column holds either kind of pin; a key pin is told apart by its spki:sha256: prefix.
      const row = { name: peer.name, url: peer.url, fingerprint: peer.keyPin ?? peer.fingerprint ?? null, addedAt: new Date().toISOString() };
      this.db
        .insert(peers)
        .values(row)
        .onConflictDoUpdate({ target: peers.name, set: { url: row.url, fingerprint: row.fingerprint, addedAt: row.addedAt } })
        .run();
      return toPeer(row);
    });
  }

  get(name: string): Peer | undefined {
    const row = this.db.select().from(peers).where(eq(peers.name, name)).get();
    return row ? toPeer(row) : undefined;
  }

  list(): Peer[] {
    return this.db.select().from(peers).orderBy(asc(peers.name)).all().map(toPeer);
  }

  pinKey(name: string, keyPin: string): boolean {
    return this.db.update(peers).set({ fingerprint: keyPin }).where(eq(peers.name, name)).returning({ name: peers.name }).all().length > 0;
  }

  remove(name: string): boolean {
    return this.db.delete(peers).where(eq(peers.name, name)).returning({ name: peers.name }).all().length > 0;
  }
}

function toPeer(row: { name: string; url: string; fingerprint: string | null; addedAt: string }): Peer {
  const p: Peer = { name: row.name, url: row.url, addedAt: row.addedAt };
  if (row.fingerprint && isKeyPin(row.fingerprint)) p.keyPin = row.fingerprint;
  else if (row.fingerprint) p.fingerprint = row.fingerprint;
  return p;
}
