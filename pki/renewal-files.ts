import { existsSync, linkSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fsyncDir, PUBLIC_MODE, SECRET_MODE, writeFileAtomic } from "./secure-file";

/** This node's key and certificate files (HomePaths fits). */
export interface NodeFiles {
  nodeCert: string;
  nodeKey: string;
}

const next = (path: string) => `${path}.new`;
const old = (path: string) => `${path}.old`;

/**
 * Puts a renewed key and certificate in place of the current pair. Two files cannot be replaced in one atomic
 * step, so: both new files are written whole first (node.key.new 0600, node.crt.new), the current pair is kept
 * as node.key.old / node.crt.old, then each new file is renamed over its old one, the key first. A crash at any
 * point leaves either the old pair or the new pair, or a state recoverInterruptedRenewal completes at the next
 * start. The .old copies are removed once the new pair is in place, and the folder is synced, so the renamed
 * pair (not the old one, whose certificate the CA may have superseded) is what an OS crash or power loss leaves.
 *
 * @example installRenewedIdentity(homePaths(home), { certPem, keyPem })
 */
export function installRenewedIdentity(files: NodeFiles, pair: { certPem: string; keyPem: string }): void {
  writeFileAtomic(next(files.nodeKey), pair.keyPem, { mode: SECRET_MODE, overwrite: true });
  writeFileAtomic(next(files.nodeCert), pair.certPem, { mode: PUBLIC_MODE, overwrite: true });
  for (const path of [files.nodeKey, files.nodeCert]) {
    rmSync(old(path), { force: true });
    linkSync(path, old(path));
  }
  renameSync(next(files.nodeKey), files.nodeKey);
  renameSync(next(files.nodeCert), files.nodeCert);
  for (const path of [files.nodeKey, files.nodeCert]) rmSync(old(path), { force: true });
  fsyncDir(dirname(files.nodeKey));
}

/**
 * Finishes a renewal a crash interrupted, before the identity is read: both new files written means the CA
 * had issued the new pair, so it is put in place; a key renamed without its certificate gets the certificate
 * that goes with it. A lone new key (its certificate never written) is dropped. Returns what it did, if anything.
 */
export function recoverInterruptedRenewal(files: NodeFiles): "completed" | "discarded" | undefined {
  const keyNext = existsSync(next(files.nodeKey));
  const certNext = existsSync(next(files.nodeCert));
  if (!keyNext && !certNext) {
    for (const path of [files.nodeKey, files.nodeCert])
      if (existsSync(old(path)) && existsSync(path)) rmSync(old(path));
    return undefined;
  }
  let outcome: "completed" | "discarded";
  if (certNext) {
    // Either both are new (rename both), or the key was already renamed (rename the certificate).
    if (keyNext) renameSync(next(files.nodeKey), files.nodeKey);
    renameSync(next(files.nodeCert), files.nodeCert);
    outcome = "completed";
  } else {
    rmSync(next(files.nodeKey));
    outcome = "discarded";
  }
  for (const path of [files.nodeKey, files.nodeCert]) rmSync(old(path), { force: true });
  return outcome;
}
