import { resolve } from "node:path";
import type { ServeConfig } from "../config";
import type { HomePaths } from "../home";
import type { Logger } from "../log";
import { AuditLog, type AuditCall, type AuditRefusal } from "./audit-log";
import type { RefusedPeer } from "./mtls-listener";
import { classify, RefusalLog } from "./refusal-log";
import { keyOf, RefusalTally, summed } from "./refusal-tally";
import { reasonOf } from "../reason";

/**
 * Where the node's calls and refusals are written down: refusals go to the journal at a rate (RefusalLog), and
 * with the audit log on, calls and refusals go there too. The audit log records the first of each source and
 * kind in a minute and sums up the rest, so that no flood can rotate away what it held before; rate-limited
 * calls are refusals too, summed per peer like the rest (see refusal-tally.ts), so a caller in a loop cannot
 * rotate the audit log away either.
 */
export class AuditTrail {
  /** Where the audit log is written, or "off". */
  readonly where: string;
  /** Records one answered call; absent with the audit log off. */
  readonly call: ((call: AuditCall) => void) | undefined;
  private readonly audit: AuditLog | undefined;
  private readonly journal: RefusalLog;
  private readonly refusals: RefusalTally<AuditRefusal> | undefined;
  private readonly limitedCalls: RefusalTally<AuditCall> | undefined;

  constructor(paths: HomePaths, config: ServeConfig, log: Logger, countRefusal: (kind: string) => void) {
    const audit = openAuditLog(paths, config, log);
    this.audit = audit;
    this.where = audit ? auditPath(paths, config) : "off";
    this.journal = new RefusalLog(log, { detailedPerWindow: config.logRefusalsPerMinute, count: countRefusal });
    this.refusals =
      audit &&
      new RefusalTally<AuditRefusal>({
        write: (r, repeats) => audit.refused(summed(r, repeats)),
        key: keyOf,
        kind: (r) => r.kind,
      });
    const limitedCalls =
      audit &&
      new RefusalTally<AuditCall>({
        write: (call, repeats) => audit.call(repeats ? { ...call, more: repeats.more, since: repeats.since } : call),
        key: (call) => `${call.peer} ${call.binding}`,
        kind: () => "rate_limited",
      });
    this.limitedCalls = limitedCalls;
    this.call =
      audit && ((call: AuditCall) => (call.outcome === "rate_limited" ? limitedCalls?.add(call) : audit.call(call)));
  }

  /** A refused connection, handshake or request; `peer` is the certificate it presented, if any. */
  refused(reason: string, remote: string | undefined, peer?: RefusedPeer, kind = classify(reason)): void {
    this.journal.refused(reason, remote, { kind });
    this.refusals?.add({ kind, reason, remote, peer: peer?.name, fingerprint: peer?.fingerprint });
  }

  /** A failed enrollment: a refusal like the others, named for the machine that asked. */
  enrollmentRefused(e: { kind: string; reason: string; remote: string | undefined; name?: string }): void {
    this.journal.refused(e.reason, e.remote, { kind: e.kind, msg: "refused an enrollment", fields: { name: e.name } });
    this.refusals?.add({ kind: e.kind, reason: e.reason, remote: e.remote, name: e.name });
  }

  /** Opens the audit log's file again (SIGHUP: after logrotate moved it). */
  reopen(): void {
    this.audit?.reopen();
  }

  /** Writes the journal's pending refusal summary (when the listeners stop accepting). */
  flushJournal(): void {
    this.journal.flush();
  }

  /** Writes the summed refusals and closes the audit log (once the listeners are closed). */
  close(): void {
    this.refusals?.flush();
    this.limitedCalls?.flush();
    this.audit?.close();
  }
}

/** Where the audit log goes: HOME/audit.jsonl unless audit_log names another file (relative: in the home). */
function auditPath(paths: HomePaths, config: ServeConfig): string {
  return config.auditLog === undefined ? paths.auditLog : resolve(paths.root, config.auditLog);
}

function openAuditLog(paths: HomePaths, config: ServeConfig, log: Logger): AuditLog | undefined {
  if (config.auditLog === "off") return undefined;
  const path = auditPath(paths, config);
  try {
    return new AuditLog({
      path,
      maxBytes: config.auditLogMaxBytes,
      keep: config.auditLogKeep,
      onError: (err) =>
        log.error("could not write the audit log; lines are dropped until it works again", {
          path,
          reason: reasonOf(err),
        }),
      onRecovered: (dropped) => log.warn("the audit log is written again", { path, dropped }),
    });
  } catch (err) {
    throw new Error(
      `cannot open the audit log ${path}: ${(err as Error).message}; make its folder writable, or set audit_log to another file (or to off)`,
    );
  }
}
