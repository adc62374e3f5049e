import { existsSync, statSync } from "node:fs";
import { readRevocationList, type RevocationList } from "../../pki/crl-reader";
import { PUBLIC_MODE, readPublic, writeFileAtomic } from "../../pki/secure-file";
import { recordCrlChecked, recordCrlSource } from "../../pki/crl-source";
import type { Logger } from "../log";

export interface RevocationIdentity {
  caPem: string;
  name: string;
  serialNumber: string;
}

/**
 * The fleet revocation list this node enforces, in memory and in HOME/certs/crl.pem. A list is taken only when
 * the fleet CA signed it and its number is not lower than the one held, so neither a forged nor an old list
 * can bring a revoked certificate back. Deleting the file does not either: the last list stays in force until
 * the daemon restarts. The file is looked at again (one stat) before each connection is judged, so a list
 * written into the home (`pki revoke` on the CA machine, `pki import-crl`) applies to the next connection.
 */
export class RevocationState {
  private list: RevocationList | undefined;
  private stamp = "";
  private readonly listeners: ((list: RevocationList) => void)[] = [];
  /** When the list's source last confirmed it: the CA node answered a fetch, or this CA home signed it. */
  private confirmed: Date | undefined;

  constructor(
    private readonly path: string,
    private readonly identity: () => RevocationIdentity,
    private readonly log: Logger,
  ) {}

  /**
   * When the certificate with this serial was revoked, or undefined; judged against the list on disk now (a
   * stat of the file, and a read only when it changed), so a revocation written a moment ago counts.
   */
  revokedAt = (serial: string): Date | undefined => {
    this.loadFromDisk();
    return this.list?.revoked.get(serial);
  };

  /** When this node's own certificate was revoked by the list in force, or undefined. */
  ownRevocation(): { serial: string; at: Date } | undefined {
    const serial = normalized(this.identity().serialNumber);
    const at = this.list?.revoked.get(serial);
    return at ? { serial, at } : undefined;
  }

  /** The list's source confirmed it now (a fetch from the CA node answered, or this CA home signed it). */
  confirm(at = new Date()): void {
    this.confirmed = at;
  }

  /** When the list's source last confirmed it (see confirm), if it has since this process started. */
  confirmedAt(): Date | undefined {
    return this.confirmed;
  }

  current(): RevocationList | undefined {
    return this.list;
  }

  /** Calls `fn` each time a new list is taken. */
  onChange(fn: (list: RevocationList) => void): void {
    this.listeners.push(fn);
  }

  /** Reads the file again if it changed (pki revoke or pki import-crl wrote it). Cheap when it did not. */
  loadFromDisk(): void {
    if (!existsSync(this.path)) return;
    let stamp: string;
    try {
      const st = statSync(this.path);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return;
    }
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    try {
      this.take(readRevocationList(readPublic(this.path), this.identity().caPem, this.path), this.path, false);
    } catch (err) {
      this.log.error("ignoring the revocation list on disk; the one in force stays", {
        path: this.path,
        reason: (err as Error).message,
      });
    }
  }

  /**
   * A list from elsewhere (the CA node): checked, then kept on disk and used when newer than the one held.
   * Throws BAD_CRL when it is not the fleet CA's; returns whether it was taken.
   */
  offer(pem: string, source: string, fromPeer?: string): boolean {
    const list = readRevocationList(pem, this.identity().caPem, `the revocation list from ${source}`);
    const now = new Date();
    if (this.list && list.number <= this.list.number) {
      if (fromPeer && list.number === this.list.number) recordCrlChecked(this.path, list.number, fromPeer, now);
      return false;
    }
    writeFileAtomic(this.path, list.pem, { mode: PUBLIC_MODE, overwrite: true });
    if (fromPeer) recordCrlSource(this.path, list.number, { kind: "ca-peer", peer: fromPeer, at: now.toISOString() });
    const st = statSync(this.path);
    this.stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    return this.take(list, source, true);
  }

  private take(list: RevocationList, source: string, fromOffer: boolean): boolean {
    if (this.list && list.number < this.list.number) {
      this.log.warn("ignoring an older revocation list; the newer one stays in force", {
        source,
        number: list.number,
        in_force: this.list.number,
      });
      return false;
    }
    if (this.list && list.number === this.list.number && !fromOffer) return false;
    const before = this.list;
    this.list = list;
    // The CA node signs the same revocations anew every refresh period (so lists do not go stale): only a list
    // that revokes something else is worth a line.
    if (before && sameRevocations(before, list)) {
      for (const fn of this.listeners) fn(list);
      return true;
    }
    this.log.info("revocation list in force", {
      source,
      number: list.number,
      revoked: list.revoked.size,
      signed: list.thisUpdate.toISOString(),
    });
    const own = this.ownRevocation();
    if (own)
      this.log.error("this node's own certificate is revoked; peers refuse it", {
        name: this.identity().name,
        serial: own.serial,
        revoked: own.at.toISOString(),
        next: newIdentityHint(this.identity().name),
      });
    for (const fn of this.listeners) fn(list);
    return true;
  }
}

/** A serial as the revocation list keys it: uppercase hex without leading zeros. */
function normalized(serial: string): string {
  return serial.toUpperCase().replace(/^0+(?=.)/, "");
}

/** What the holder of a revoked certificate does next: a new identity from the CA machine. */
export function newIdentityHint(name: string): string {
  return `get a new identity from the fleet CA: on the CA machine 'a2a-node pki issue ${name} --replace --out ${name}.bundle'; here, move the node's key and certificate aside and install it ('a2a-node init-pki --bundle ${name}.bundle')`;
}

/** Whether two lists revoke the same certificates at the same times. */
function sameRevocations(a: RevocationList, b: RevocationList): boolean {
  if (a.revoked.size !== b.revoked.size) return false;
  for (const [serial, at] of a.revoked) if (b.revoked.get(serial)?.getTime() !== at.getTime()) return false;
  return true;
}
