/**
 * Where a service's files go, and talking to systemd about it. A system service lives in /etc/systemd/system
 * with its home in the state directory; a user service in the user's ~/.config/systemd/user with the node's
 * usual home. Under an image root (--root) every path is below that root, but the unit names them as the
 * booted system will see them.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ServiceError } from "./errors";
import { SYSTEM_HOME } from "../home";
import { writeFileAtomic } from "../../pki/secure-file";
import { under, type Host } from "./host";
import { UNIT_NAME, type UnitScope } from "./unit";

export interface ServiceLocation {
  scope: UnitScope;
  /** The node's home, as the service sees it (A2A_NODE_HOME in the unit). */
  home: string;
  homeOnDisk: string;
  unitPath: string;
  unitPathOnDisk: string;
  /** For a user service: whose it is. */
  userName?: string;
}

export function locate(
  scope: UnitScope,
  host: Host,
  env: Record<string, string | undefined>,
  userHome: string,
): ServiceLocation {
  if (scope === "system") {
    const unitPath = join("/etc/systemd/system", UNIT_NAME);
    return {
      scope,
      home: SYSTEM_HOME,
      homeOnDisk: under(host, SYSTEM_HOME),
      unitPath,
      unitPathOnDisk: under(host, unitPath),
    };
  }
  const config = env.XDG_CONFIG_HOME || join(env.HOME || "/", ".config");
  const unitPath = join(config, "systemd", "user", UNIT_NAME);
  return {
    scope,
    home: userHome,
    homeOnDisk: userHome,
    unitPath,
    unitPathOnDisk: unitPath,
    userName: env.USER || env.LOGNAME,
  };
}

/** Writes the unit (0644) if its text changed; says whether it did. */
export function writeUnit(path: string, text: string): boolean {
  if (existsSync(path) && readFileSync(path, "utf8") === text) return false;
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeFileAtomic(path, text, { mode: 0o644, overwrite: true });
  return true;
}

/** `systemctl [--user] ARGS`; a failure becomes an error saying what to look at next. */
export function systemctl(
  host: Host,
  loc: ServiceLocation,
  args: string[],
  opts: { startFailure?: boolean; allowFailure?: boolean } = {},
) {
  const user = loc.scope === "user" ? ["--user"] : [];
  const r = host.run(["systemctl", ...user, ...args]);
  if (r.code === 0 || opts.allowFailure) return r;
  const said = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(0, 3).join("; ");
  const cmd = `systemctl ${[...user, ...args].join(" ")}`;
  if (opts.startFailure)
    throw new ServiceError(
      `${UNIT_NAME} did not start (${cmd} exited ${r.code}${said ? `: ${said}` : ""})`,
      "failure",
      `see why: journalctl ${user.join(" ")}${user.length ? " " : ""}-u a2a-node -n 50 --no-pager; fix it, then: ${cmd}`,
    );
  const noBus = /bus|XDG_RUNTIME_DIR/i.test(said) && loc.scope === "user";
  throw new ServiceError(
    `${cmd} failed (exit ${r.code})${said ? `: ${said}` : ""}`,
    "failure",
    noBus
      ? "a user service needs your login session's service manager: run this from your own login (ssh or console), not through su or sudo"
      : "see the message above; then run this again",
  );
}

/**
 * systemctl can be installed where systemd does not run (a container, WSL without systemd): then every step
 * after the files would fail. Asked first, so nothing is changed on such a machine. "offline" is what
 * is-system-running answers there; a user manager that cannot be reached fails to connect to its bus.
 */
export function requireRunningManager(host: Host, loc: ServiceLocation): void {
  const r = systemctl(host, loc, ["is-system-running"], { allowFailure: true });
  const said = `${r.stdout}${r.stderr}`.trim();
  if (
    r.stdout.trim() === "offline" ||
    /not been booted with systemd|Failed to connect to bus|XDG_RUNTIME_DIR/i.test(said)
  )
    throw new ServiceError(
      `systemd is not running ${loc.scope === "user" ? "for your user (no user service manager to talk to)" : "on this machine"}: systemctl says "${said.split("\n")[0]}"`,
      "failure",
      loc.scope === "user"
        ? "run this from your own login session (ssh or console, not su or sudo), or install a system service: sudo a2a-node service install"
        : "run 'a2a-node serve' under the supervisor this machine uses instead (or install into an image with --root DIR)",
    );
}
