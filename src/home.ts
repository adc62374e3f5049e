import { mkdirSync, statSync, chmodSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * The fixed layout of a node's home folder. Everything a node owns lives here, behind these helpers, so no
 * other module builds a path by hand:
 *
 *   HOME/                 0700
 *     certs/ca.crt        fleet CA certificate (public)
 *     certs/node.crt      this node's certificate (public)
 *     certs/crl.pem       the fleet's revocation list this node enforces (public, signed by the fleet CA)
 *     secrets/            0700
 *       ca.key            fleet CA key (only on the machine that issues certificates)
 *       node.key          this node's key (never leaves the machine)
 *       ca-registry.db    what the fleet CA issued and revoked, and its join tokens (CA machine only)
 *     a2a-node.db         SQLite database (tasks, events, peers), WAL mode
 */
export interface HomePaths {
  root: string;
  certsDir: string;
  secretsDir: string;
  caCert: string;
  caKey: string;
  caRegistry: string;
  nodeCert: string;
  nodeKey: string;
  crl: string;
  database: string;
}

export const DEFAULT_HOME_DIRNAME = ".a2a-node";

/** --home wins over A2A_NODE_HOME, which wins over ~/.a2a-node. */
export function resolveHome(flag: string | undefined, env: Record<string, string | undefined>): string {
  const chosen = flag || env.A2A_NODE_HOME || join(env.HOME || homedir(), DEFAULT_HOME_DIRNAME);
  return resolve(chosen);
}

export function homePaths(root: string): HomePaths {
  const certsDir = join(root, "certs");
  const secretsDir = join(root, "secrets");
  return {
    root,
    certsDir,
    secretsDir,
    caCert: join(certsDir, "ca.crt"),
    caKey: join(secretsDir, "ca.key"),
    caRegistry: join(secretsDir, "ca-registry.db"),
    nodeCert: join(certsDir, "node.crt"),
    nodeKey: join(secretsDir, "node.key"),
    crl: join(certsDir, "crl.pem"),
    database: join(root, "a2a-node.db"),
  };
}

/**
 * Creates the home and its folders if absent, private to the user (0700). An existing home that others can
 * read is tightened rather than trusted as is, because it holds keys.
 */
export function ensureHome(paths: HomePaths): HomePaths {
  for (const dir of [paths.root, paths.certsDir, paths.secretsDir]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  }
  return paths;
}
