import { homeLockHolder } from "../home-lock";

/** What became of telling this home's running serve to read what a command changed. */
export interface ServeTold {
  /** The serve running on the home, if one runs. */
  pid?: number;
  /** It was sent SIGHUP. */
  told: boolean;
  /** Why it could not be told (another user's process, say). */
  error?: string;
}

/**
 * Tells the serve running on this home, if one runs, to read again what a command just changed on disk (a
 * revocation list, a certificate, a revoked token): SIGHUP, which reloads. It then ends the connections of what
 * was revoked (new connections are judged against the files on disk anyway).
 */
export function tellRunningServe(home: string): ServeTold {
  const pid = homeLockHolder(home);
  if (pid === undefined) return { told: false };
  try {
    process.kill(pid, "SIGHUP");
    return { pid, told: true };
  } catch (err) {
    return { pid, told: false, error: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
  }
}

/** The line a command prints about it. */
export function toldLine(t: ServeTold, what: string): string {
  if (t.told) return `told the running serve (PID ${t.pid}) with SIGHUP: ${what}`;
  if (t.pid !== undefined)
    return `could not signal the running serve (PID ${t.pid}: ${t.error}); send it SIGHUP (systemctl reload a2a-node) so that ${what}`;
  return "no serve is running on this home";
}
