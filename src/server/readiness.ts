/**
 * GET /health/ready: whether this node can do its work now, as checks (database, certificate, model, and where
 * watched: descriptors, the revocation list, storage), each with what it found. The answer is 503 when any fails,
 * naming the ones that did; a load balancer or systemd watchdog reads the status, a person reads the details.
 */

export interface CheckResult {
  ok: boolean;
  detail: string;
  [more: string]: unknown;
}

export type CheckName = "database" | "certificate" | "model" | "descriptors" | "revocation" | "storage";

export interface ReadinessReport {
  ready: boolean;
  /** The checks that failed, in order. */
  failed: CheckName[];
  checks: Partial<Record<CheckName, CheckResult>> & Record<"database" | "certificate" | "model", CheckResult>;
}

export interface ReadinessChecks {
  /** A write to the database commits (see store/sqlite-probe.ts). */
  database(): Promise<CheckResult>;
  /** The node's certificate and the fleet CA's are valid now. */
  certificate(): CheckResult;
  /** The executor's backing service (the model server, Hermes) answers. */
  model(signal: AbortSignal): Promise<CheckResult>;
  /** File descriptors are left to accept connections with (see descriptor-budget.ts), where that is watched. */
  descriptors?(): CheckResult;
  /** The revocation list in force is not stale (see FleetPki.revocationCheck); absent: not checked. */
  revocation?(): CheckResult;
  /** Free disk space against min_free_disk (the callers refused below it), where the node watches it. */
  storage?(): CheckResult;
}

/** A certificate this close to its end is still valid, but its check says to renew it. */
export const RENEW_WITHIN_DAYS = 14;
const DAY_MS = 86_400_000;

export async function checkReadiness(checks: ReadinessChecks, modelTimeoutMs = 2000): Promise<ReadinessReport> {
  const failedCheck = (err: unknown): CheckResult => ({
    ok: false,
    detail: `the check itself failed: ${(err as Error)?.message ?? String(err)}`,
  });
  const [database, model] = await Promise.all([
    checks.database().catch(failedCheck),
    checks.model(AbortSignal.timeout(modelTimeoutMs)).catch(failedCheck),
  ]);
  const now = (check: () => CheckResult): CheckResult => {
    try {
      return check();
    } catch (err) {
      return failedCheck(err);
    }
  };
  const certificate = now(() => checks.certificate());
  const all: ReadinessReport["checks"] = { database, certificate, model };
  if (checks.descriptors) all.descriptors = now(checks.descriptors);
  if (checks.revocation) all.revocation = now(checks.revocation);
  if (checks.storage) all.storage = now(checks.storage);
  const failed = (Object.keys(all) as CheckName[]).filter((k) => !all[k]?.ok);
  return { ready: failed.length === 0, failed, checks: all };
}

export interface CertificateDates {
  name: string;
  notBefore: Date;
  notAfter: Date;
  ca: { notBefore: Date; notAfter: Date };
  /** When the fleet's revocation list revoked this certificate, if it does, and the serial it names. */
  revoked?: { serial: string; at: Date };
}

/**
 * The node's certificate and the fleet CA's, against the clock: failed when either has expired or is not yet
 * valid (peers refuse the node then), with the days left of whichever ends first, and advice to renew within
 * RENEW_WITHIN_DAYS of that.
 */
export function certificateCheck(id: CertificateDates, now = new Date()): CheckResult {
  const t = now.getTime();
  const ends = Math.min(id.notAfter.getTime(), id.ca.notAfter.getTime());
  const which =
    id.ca.notAfter.getTime() < id.notAfter.getTime() ? "the fleet CA certificate" : `the certificate of ${id.name}`;
  const daysLeft = Math.floor((ends - t) / DAY_MS);
  const facts = { notAfter: id.notAfter.toISOString(), caNotAfter: id.ca.notAfter.toISOString(), daysLeft };
  const renew = "issue a new one on the CA machine (a2a-node pki issue NAME --out FILE), install it, and send SIGHUP";
  if (id.revoked)
    return {
      ok: false,
      detail: `the certificate of ${id.name} (serial ${id.revoked.serial}) was revoked by the fleet CA on ${id.revoked.at.toISOString()}: peers refuse this node; get a new identity from the CA machine (a2a-node pki issue ${id.name} --replace --out FILE there)`,
      ...facts,
      revoked: id.revoked.at.toISOString(),
    };
  if (t >= ends)
    return {
      ok: false,
      detail: `${which} expired on ${new Date(ends).toISOString()}: peers refuse this node; ${renew}`,
      ...facts,
      daysLeft: 0,
    };
  for (const [c, what] of [
    [id, `the certificate of ${id.name}`],
    [id.ca, "the fleet CA certificate"],
  ] as const)
    if (t < c.notBefore.getTime())
      return {
        ok: false,
        detail: `${what} is not valid before ${c.notBefore.toISOString()} (is this machine's clock right?)`,
        ...facts,
      };
  if (daysLeft < RENEW_WITHIN_DAYS)
    return { ok: true, detail: `valid, but ${which} expires in ${daysLeft} days: ${renew}`, ...facts };
  return { ok: true, detail: `valid until ${new Date(ends).toISOString()} (${daysLeft} days)`, ...facts };
}

/** What the storage check reads: the free-space floor's state (see store/disk-floor.ts). */
export interface FloorReading {
  freeBytes: number;
  floorBytes: number;
  refusing: "none" | "heaviest" | "all";
  heaviest?: { owner: string; bytes: number };
  error?: string;
}

/**
 * Free disk space against min_free_disk: failed while the node refuses callers for want of space (naming whom
 * and what frees it), so an operator's check sees it before the disk is full. Without a floor (off, or on
 * Postgres, whose disk this node cannot see) it passes and says why nothing is watched.
 */
export function storageCheck(floor: FloorReading | undefined, why = "min_free_disk is 0"): CheckResult {
  if (!floor) return { ok: true, detail: `free disk space is not watched (${why}); the per-caller quotas still apply` };
  const facts = {
    freeBytes: floor.freeBytes,
    minFreeDisk: floor.floorBytes,
    refusing: floor.refusing,
    ...(floor.heaviest ? { heaviest: floor.heaviest.owner, heaviestBytes: floor.heaviest.bytes } : {}),
  };
  if (floor.error)
    return {
      ok: true,
      detail: `free disk space could not be read (${floor.error}); nothing is refused on its account`,
      ...facts,
    };
  const advice = "free space on that file system, or lower retention_days or the callers' quotas (max_caller_bytes)";
  if (floor.refusing === "all")
    return {
      ok: false,
      detail: `${floor.freeBytes} bytes free, below half of min_free_disk (${floor.floorBytes}): new tasks and messages of every caller are refused; ${advice}`,
      ...facts,
    };
  if (floor.refusing === "heaviest")
    return {
      ok: false,
      detail: `${floor.freeBytes} bytes free, below min_free_disk (${floor.floorBytes}): new tasks and messages of ${floor.heaviest?.owner ?? "the heaviest caller"} (the caller whose tasks take the most, ${floor.heaviest?.bytes ?? "?"} bytes) are refused; ${advice}`,
      ...facts,
    };
  return { ok: true, detail: `${floor.freeBytes} bytes free (min_free_disk ${floor.floorBytes})`, ...facts };
}
