import { join } from "node:path";
import { giveToHomeOwner, homePaths } from "../home";

/**
 * Root working in the service's home (sudo a2a-node pki ...) hands every PKI file it may have made or
 * replaced to the home's owner: a key, a registry or a revocation list only root can read would stop the
 * service.
 */
export function handPkiFilesToOwner(home: string): void {
  const p = homePaths(home);
  giveToHomeOwner(p.root, [
    p.certsDir,
    p.secretsDir,
    p.caCert,
    p.caKey,
    p.caRegistry,
    p.nodeCert,
    p.nodeKey,
    p.crl,
    join(home, "config.toml"),
    p.database,
    `${p.database}-wal`,
    `${p.database}-shm`,
  ]);
}
