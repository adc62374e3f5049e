/**
 * `a2a-node service install`: the whole sequence a person used to type by hand, in the order that works.
 * For a system service: the service user, the state directory as the node's home (0700, the user's), the
 * identity (made or installed as root, then handed to the user, keys 0600), the binary where the sandbox
 * can run it, the unit, then systemd. For a user service: the same in the user's own home, no new user.
 * Every input is checked before the first change, so a mistake never leaves half an install.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lchownSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  renameSync,
  statSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ServiceError } from "./errors";
import { ensureHome, homePaths, SYSTEM_HOME } from "../home";
import { lookupUser, under, type Account, type Host } from "./host";
import { requireRunningManager, type ServiceLocation, systemctl, writeUnit } from "./systemd";
import { renderUnit, SERVICE_USER, SYSTEM_BINARY, UNIT_NAME } from "./unit";

export interface IdentityRequest {
  /** init-pki --name: a new fleet whose CA this machine holds. */
  name?: string;
  sans: string[];
  days?: number;
  /** init-pki --bundle: join a fleet with an identity issued on its CA machine. */
  bundle?: string;
}

export interface InstallRequest {
  location: ServiceLocation;
  host: Host;
  /** The running binary (process.execPath of the compiled a2a-node). */
  self: string;
  identity: IdentityRequest;
  start: boolean;
  /** Progress, one line per step done. */
  say(line: string): void;
}

export interface InstallResult {
  unitPath: string;
  home: string;
  binary: string;
  node: { name: string; fingerprint256: string; notAfter: Date; how: "created" | "installed" | "kept" };
  user?: string;
  /** False with --no-start, and for an image (--root), which no systemd is running. */
  started: boolean;
}

export async function install(req: InstallRequest): Promise<InstallResult> {
  const { location: loc, host, say } = req;
  const system = loc.scope === "system";
  // Checks first: nothing below may fail on something knowable now.
  if (system && !host.isRoot)
    throw new ServiceError(
      "installing a system service needs root",
      "failure",
      "run it with sudo (sudo a2a-node service install ...), or install a service of your own user with --user",
    );
  if (!host.which("systemctl"))
    throw new ServiceError(
      "systemctl was not found on PATH: this machine does not seem to run systemd",
      "failure",
      "run 'a2a-node serve' under the supervisor this machine uses instead",
    );
  if (host.root === "/") requireRunningManager(host, loc);
  const paths = homePaths(loc.homeOnDisk);
  const hasIdentity = existsSync(paths.nodeCert);
  const id = req.identity;
  if (!hasIdentity && id.name === undefined && id.bundle === undefined)
    throw new ServiceError(
      `${loc.home} has no identity yet: give --name NAME (a new fleet; this machine holds its CA) or --bundle FILE (join a fleet: 'a2a-node pki issue NAME --out FILE' on its CA machine)`,
      "usage",
    );
  const bundle = id.bundle === undefined ? undefined : resolve(id.bundle);
  if (bundle !== undefined && !existsSync(bundle))
    throw new ServiceError(`no bundle at ${bundle}`, "not-found", "check the path you copied it to");
  const pki = await import("../../pki");
  if (hasIdentity && (id.name !== undefined || bundle !== undefined))
    await refuseOtherIdentity(pki, paths, loc.home, id.name, bundle);
  let account: Account | undefined;
  if (system) {
    account = lookupUser(host, SERVICE_USER);
    if (!account && !host.which("useradd"))
      throw new ServiceError(
        `there is no user ${SERVICE_USER} and useradd was not found on PATH`,
        "failure",
        `create a system user named ${SERVICE_USER} with home ${SYSTEM_HOME}, then run this again`,
      );
  }

  // 1. The service user.
  if (system && !account) {
    const args = [
      "useradd",
      "--system",
      "--user-group",
      "--home-dir",
      SYSTEM_HOME,
      "--no-create-home",
      "--shell",
      "/usr/sbin/nologin",
      "--comment",
      "a2a-node service",
      SERVICE_USER,
    ];
    if (host.root !== "/") args.splice(1, 0, "--root", host.root);
    const r = host.run(args);
    if (r.code !== 0)
      throw new ServiceError(
        `useradd ${SERVICE_USER} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`,
        "failure",
        `create the user yourself, then run this again`,
      );
    account = lookupUser(host, SERVICE_USER);
    if (!account)
      throw new ServiceError(
        `useradd succeeded but user ${SERVICE_USER} cannot be found`,
        "failure",
        "check /etc/passwd and name service configuration",
      );
    say(`created system user ${SERVICE_USER} (uid ${account.uid})`);
  } else if (account) say(`using system user ${SERVICE_USER} (uid ${account.uid})`);

  // 2. The home: the state directory (system) or the user's node home, 0700.
  const fresh = !existsSync(loc.homeOnDisk);
  // Its parents as a system has them (/var/lib is 0755): under an image root they may not exist yet, and
  // ensureHome would make them 0700, shutting the service user out of its own home.
  mkdirSync(dirname(loc.homeOnDisk), { recursive: true, mode: 0o755 });
  ensureHome(paths);
  if (account) chownTree(loc.homeOnDisk, account);
  say(`${fresh ? "created" : "using"} home ${loc.home} (0700${account ? `, owned by ${account.name}` : ""})`);

  // 3. The identity, made or installed here as root, then given to the service user.
  let node: InstallResult["node"];
  if (hasIdentity) {
    const have = await pki.loadNodeIdentity(paths, { allowExpired: true });
    node = { name: have.name, fingerprint256: have.fingerprint256, notAfter: have.notAfter, how: "kept" };
  } else {
    const r =
      bundle !== undefined
        ? await pki.installBundle(paths, bundle).catch(asServiceError)
        : await pki.initPki(paths, { name: id.name as string, sans: id.sans, days: id.days }).catch(asServiceError);
    node = {
      name: r.node.name,
      fingerprint256: r.node.fingerprint256,
      notAfter: r.node.notAfter,
      how: bundle !== undefined ? "installed" : "created",
    };
  }
  if (account) chownTree(loc.homeOnDisk, account);
  say(
    `${node.how === "kept" ? "kept the identity already there" : node.how === "created" ? "created fleet CA and identity" : `installed identity from ${bundle}`}: node "${node.name}"`,
  );
  if (bundle !== undefined) say(`  delete ${bundle} now (it holds this node's private key)`);

  // 4. The binary, where the service can run it (a system service cannot see /home or /root).
  const binary = system ? SYSTEM_BINARY : realpathSync(req.self);
  if (system) {
    const target = under(host, SYSTEM_BINARY);
    if (!sameFile(req.self, target)) {
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      const tmp = `${target}.${process.pid}.tmp`;
      copyFileSync(req.self, tmp);
      chmodSync(tmp, 0o755);
      // rename, not a copy over the file: a running binary cannot be written in place.
      renameSync(tmp, target);
      say(`installed this binary as ${SYSTEM_BINARY}`);
    }
  }

  // 5. The unit, then systemd.
  const changed = writeUnit(loc.unitPathOnDisk, renderUnit({ scope: loc.scope, binary, home: loc.home }));
  say(`${changed ? "wrote" : "unchanged:"} ${loc.unitPath}`);
  let started = false;
  if (host.root !== "/") {
    systemctl(host, loc, ["--root", host.root, "enable", UNIT_NAME]);
    say(`enabled ${UNIT_NAME} in ${host.root} (not started: no systemd runs that root)`);
  } else {
    systemctl(host, loc, ["daemon-reload"]);
    systemctl(host, loc, ["enable", UNIT_NAME]);
    say(`enabled ${UNIT_NAME}${system ? "" : " (user)"}`);
    if (req.start) {
      // restart, not start: installing again (a new binary, a new unit) must take effect now.
      systemctl(host, loc, ["restart", UNIT_NAME], { startFailure: true });
      started = true;
      say(`started ${UNIT_NAME}: serving`);
    }
    if (!system) lingerFor(host, loc.userName, say);
  }
  return { unitPath: loc.unitPath, home: loc.home, binary, node, user: account?.name, started };
}

type Pki = typeof import("../../pki");

/** Asked for an identity while the home has one: fine if it is the same, refused otherwise (never replaced). */
async function refuseOtherIdentity(
  pki: Pki,
  paths: ReturnType<typeof homePaths>,
  home: string,
  name: string | undefined,
  bundle: string | undefined,
) {
  const have = await pki.loadNodeIdentity(paths, { allowExpired: true }).catch(asServiceError);
  const asked =
    bundle !== undefined
      ? await pki.readBundle(bundle).then((b) => pki.inspectCert(b.cert).fingerprint256, asServiceError)
      : undefined;
  if (asked !== undefined ? asked === have.fingerprint256 : name === have.name) return;
  throw new ServiceError(
    `${home} already holds the identity of node "${have.name}" (${have.fingerprint256.slice(0, 23)}...); it is never replaced`,
    "failure",
    `run without --name/--bundle to keep it, or remove the service and its home first: a2a-node service uninstall --purge`,
  );
}

function asServiceError(err: unknown): never {
  const e = err as { name?: string; message?: string; hint?: string };
  if (e?.name === "PkiError") throw new ServiceError(e.message ?? "certificate error", "failure", e.hint);
  throw err;
}

/** The home and all it holds belong to the service user: it must read its key and write its database. */
function chownTree(path: string, owner: Account): void {
  lchownSync(path, owner.uid, owner.gid);
  if (!statSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) chownTree(join(path, name), owner);
}

function sameFile(a: string, b: string): boolean {
  if (!existsSync(b)) return false;
  const sa = statSync(a);
  const sb = statSync(b);
  return sa.dev === sb.dev && sa.ino === sb.ino;
}

/**
 * A user's services stop when the user logs out, unless lingering is on: a node must keep serving. Asking
 * is allowed for one's own user on most systems; where it is not, say what to run.
 */
function lingerFor(host: Host, user: string | undefined, say: (line: string) => void): void {
  const hint = `so it keeps running after you log out and starts at boot, run: sudo loginctl enable-linger ${user ?? "$USER"}`;
  if (!user || !host.which("loginctl")) return say(hint);
  const r = host.run(["loginctl", "enable-linger", user]);
  say(
    r.code === 0
      ? `enabled lingering for ${user}: the service runs without a login session and starts at boot`
      : `could not enable lingering (${r.stderr.trim() || `exit ${r.code}`}); ${hint}`,
  );
}
