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

type Row = typeof peers.$inferSelect;

export class SqlitePeerRegistry implements PeerRegistry {
  constructor(private readonly db: Db) {}

  add(peer: Omit<Peer, "addedAt">, options: { replace?: boolean } = {}): Peer {
    return this.db.transaction(
      () => {
        const existing = this.get(peer.name);
        if (existing && !options.replace) throw new PeerExistsError(existing);
        const trust = peer.trust ?? { kind: "fleet" as const };
        const row: Row = {
          name: peer.name,
          url: peer.url,
          // One column holds either kind of pin; a key pin is told apart by its spki:sha256: prefix.
          fingerprint: peer.keyPin ?? peer.fingerprint ?? null,
          addedAt: new Date().toISOString(),
          trust: trust.kind,
          caFile: trust.kind === "ca" ? trust.caFile : null,
          authKind: peer.auth?.kind ?? null,
          authFile: peer.auth?.file ?? null,
          insecureHttp: peer.insecureHttp === true,
        };
        const { name: _name, ...set } = row;
        this.db.insert(peers).values(row).onConflictDoUpdate({ target: peers.name, set }).run();
        return toPeer(row);
      },
      { behavior: "immediate" },
    ); // the write lock first: a read then a write under a busy lock fails at once
  }

  get(name: string): Peer | undefined {
    const row = this.db.select().from(peers).where(eq(peers.name, name)).get();
    return row ? toPeer(row) : undefined;
  }

  list(): Peer[] {
    return this.db.select().from(peers).orderBy(asc(peers.name)).all().map(toPeer);
  }

  pinKey(name: string, keyPin: string): boolean {
    return (
      this.db
        .update(peers)
        .set({ fingerprint: keyPin })
        .where(eq(peers.name, name))
        .returning({ name: peers.name })
        .all().length > 0
    );
  }

  remove(name: string): boolean {
    return this.db.delete(peers).where(eq(peers.name, name)).returning({ name: peers.name }).all().length > 0;
  }
}

function toPeer(row: Row): Peer {
  const p: Peer = { name: row.name, url: row.url, addedAt: row.addedAt };
  if (row.fingerprint && isKeyPin(row.fingerprint)) p.keyPin = row.fingerprint;
  else if (row.fingerprint) p.fingerprint = row.fingerprint;
  // A fleet peer reads back exactly as before outside peers existed (no trust field).
  if (row.trust === "system") p.trust = { kind: "system" };
  else if (row.trust === "ca" && row.caFile) p.trust = { kind: "ca", caFile: row.caFile };
  if ((row.authKind === "bearer" || row.authKind === "header") && row.authFile)
    p.auth = { kind: row.authKind, file: row.authFile };
  if (row.insecureHttp) p.insecureHttp = true;
  return p;
}
