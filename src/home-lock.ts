import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * One `serve` per home. Two daemons on one home would both run the same tasks' recovery, race on the same
 * database and fight over the port; the second must refuse and say which process holds the home.
 *
 * The lock is HOME/serve.pid, created atomically (a hard link of a file holding our PID, which fails if the
 * lock exists). A lock whose process is gone, or is not an a2a-node serve (the PID was reused after a reboot),
 * is stale and taken over: a daemon killed with SIGKILL must not keep its home locked forever.
 */
export interface HomeLock {
  readonly path: string;
  release(): void;
}

export class HomeLockedError extends Error {
  constructor(
    readonly pid: number,
    readonly path: string,
  ) {
    super(`another a2a-node serve (PID ${pid}) is already running on this home (${path})`);
    this.name = "HomeLockedError";
  }
}

export function acquireHomeLock(home: string): HomeLock {
  const path = join(home, "serve.pid");
  const mine = join(home, `.serve.pid.${process.pid}`);
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, path);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
      }
      const holder = readHolder(path);
      if (holder !== undefined && holder !== process.pid && isServing(holder)) throw new HomeLockedError(holder, path);
      // Stale (or our own, left by an earlier start in this process that never stopped): take it over.
      unlinkSync(path);
    }
  } finally {
    unlinkSync(mine);
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      if (readHolder(path) === process.pid) unlinkSync(path);
    },
  };
}

/** The PID of the `serve` holding this home, if one runs (for doctor: whose is the port). */
export function homeLockHolder(home: string): number | undefined {
  const pid = readHolder(join(home, "serve.pid"));
  return pid !== undefined && isServing(pid) ? pid : undefined;
}

function readHolder(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8").trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Alive, and (where /proc tells) running `serve`: a reused PID of another program does not hold the lock. */
export function isServing(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync(cmdline)) return true;
  try {
    return readFileSync(cmdline, "utf8").split("\0").includes("serve");
  } catch {
    return true;
  }
}
