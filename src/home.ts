import { chmodSync, existsSync, lchownSync, mkdirSync, statSync } from "node:fs";
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
 *     certs/crl.source.json where that list came from (this home's CA, ca_peer, or an imported file), for pki show
 *     secrets/            0700
 *       ca.key            fleet CA key (only on the machine that issues certificates)
 *       node.key          this node's key (never leaves the machine)
 *       ca-registry.db    what the fleet CA issued and revoked, and its join tokens (CA machine only)
 *     a2a-node.db         SQLite database (tasks, events, peers), WAL mode
 *     audit.jsonl         the audit log (0600), rotated to audit.jsonl.1 ... (the audit_log setting moves it)
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
  auditLog: string;
}

export const DEFAULT_HOME_DIRNAME = ".a2a-node";

/** The home of the system service (`a2a-node service install`): systemd's StateDirectory. */
export const SYSTEM_HOME = "/var/lib/a2a-node";

/** What resolveHome asks of the machine; tests pass their own. */
export interface HomeProbe {
  isRoot: boolean;
  exists(path: string): boolean;
}

const machine: HomeProbe = { isRoot: process.getuid?.() === 0, exists: existsSync };

/**
 * --home wins over A2A_NODE_HOME. Then the service's home, where it is plainly meant: for the service user
 * (whose home directory is the state directory itself, so ~/.a2a-node would be a second, empty home), and
 * for root once a system service is installed (`sudo a2a-node peers add ...` must manage the node systemd
 * runs, not a root-only ~/.a2a-node). Otherwise ~/.a2a-node.
 */
export function resolveHome(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  probe: HomeProbe = machine,
): string {
  if (flag) return resolve(flag);
  if (env.A2A_NODE_HOME) return resolve(env.A2A_NODE_HOME);
  const userHome = env.HOME || homedir();
  if (resolve(userHome) === SYSTEM_HOME) return SYSTEM_HOME;
  if (probe.isRoot && probe.exists(SYSTEM_HOME)) return SYSTEM_HOME;
  return resolve(join(userHome, DEFAULT_HOME_DIRNAME));
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
    auditLog: join(root, "audit.jsonl"),
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

/**
 * Root working in a home that belongs to someone else (`sudo a2a-node init-pki` or `peers add` on the
 * service's home) hands what it made to that owner: a key only root can read would stop the service.
 */
export function giveToHomeOwner(root: string, paths: string[], probe: Pick<HomeProbe, "isRoot"> = machine): void {
  if (!probe.isRoot || !existsSync(root)) return;
  const { uid, gid } = statSync(root);
  if (uid === 0) return;
  for (const p of paths) if (existsSync(p) && statSync(p).uid !== uid) lchownSync(p, uid, gid);
}
