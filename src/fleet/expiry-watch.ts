import { daysLeft, expiryLevel, type Validity } from "../../pki/renewal-policy";
import type { Logger } from "../log";

const DAY_MS = 86_400_000;
/** The fleet CA cannot be renewed in place: a warning this early leaves time to plan a new fleet CA. */
const CA_WARN_DAYS = 90;

export interface WatchedIdentity extends Validity {
  name: string;
  ca: Validity;
}

export interface ExpiryWatch {
  /** Logs now if anything is close to expiry (also run at start and once a day). */
  check(): void;
  stop(): void;
}

/**
 * Says in the daemon's log, at start and then daily, when this node's certificate or the fleet CA's is near
 * its end: a warning once two thirds of the node certificate's lifetime have passed (when it should have been
 * renewed), an error within its last week, and an error once expired. Silent while all is well.
 */
export function watchExpiry(
  current: () => WatchedIdentity,
  log: Logger,
  opts: { intervalMs?: number; now?: () => Date; renewHint?: string } = {},
): ExpiryWatch {
  const now = opts.now ?? (() => new Date());
  const hint = opts.renewHint ?? "a2a-node pki renew";
  const check = () => {
    const id = current();
    const at = now();
    const fields = {
      name: id.name,
      expires: id.notAfter.toISOString(),
      days_left: daysLeft(id.notAfter, at),
      next: hint,
    };
    switch (expiryLevel(id, at)) {
      case "renew":
        log.warn("this node's certificate is past two thirds of its lifetime and should be renewed", fields);
        break;
      case "urgent":
        log.error("this node's certificate expires soon; peers will refuse it then", fields);
        break;
      case "expired":
        log.error("this node's certificate has expired; peers refuse it", fields);
        break;
    }
    const caLeft = id.ca.notAfter.getTime() - at.getTime();
    if (caLeft <= 0)
      log.error("the fleet CA certificate has expired; every certificate it issued is refused", {
        expires: id.ca.notAfter.toISOString(),
      });
    else if (caLeft <= CA_WARN_DAYS * DAY_MS)
      log.warn("the fleet CA certificate expires soon; every certificate it issued stops working then", {
        expires: id.ca.notAfter.toISOString(),
        days_left: daysLeft(id.ca.notAfter, at),
      });
  };
  check();
  const timer = setInterval(check, opts.intervalMs ?? DAY_MS);
  timer.unref?.();
  return { check, stop: () => clearInterval(timer) };
}
