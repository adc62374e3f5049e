/**
 * What a service install does to the machine beyond writing files: run systemctl, useradd and friends, and
 * look up the service user. Commands are found on the caller's PATH, so a test puts recording fakes first.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Host {
  /** The file system root everything is installed under: "/" for this machine, a folder for an image. */
  root: string;
  isRoot: boolean;
  /** The full path of a command on PATH, or undefined. */
  which(command: string): string | undefined;
  run(command: string[]): RunResult;
}

export function realHost(env: Record<string, string | undefined>, root: string): Host {
  const PATH = env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  return {
    root,
    isRoot: process.getuid?.() === 0,
    which: (command) => Bun.which(command, { PATH }) ?? undefined,
    run(command) {
      const p = Bun.spawnSync(command, {
        env: { ...env, PATH } as Record<string, string>,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      return { code: p.exitCode ?? 1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
    },
  };
}

/** `root` + an absolute path of the installed system. */
export function under(host: Host, path: string): string {
  return host.root === "/" ? path : join(host.root, path);
}

export interface Account {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/**
 * A user of the installed system: from ROOT/etc/passwd (where `useradd --system` writes), or for this
 * machine through getent, which also sees users of other sources (LDAP).
 */
export function lookupUser(host: Host, name: string): Account | undefined {
  let line: string | undefined;
  if (host.root === "/" && host.which("getent")) {
    const r = host.run(["getent", "passwd", name]);
    line = r.code === 0 ? r.stdout.trim().split("\n")[0] : undefined;
  } else {
    const passwd = under(host, "/etc/passwd");
    if (existsSync(passwd))
      line = readFileSync(passwd, "utf8")
        .split("\n")
        .find((l) => l.startsWith(`${name}:`));
  }
  if (!line) return undefined;
  const f = line.split(":");
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (f[0] !== name || !Number.isInteger(uid) || !Number.isInteger(gid)) return undefined;
  return { name, uid, gid, home: f[5] ?? "" };
}
