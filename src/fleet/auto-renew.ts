import { renewalTime, type Validity } from "../../pki/renewal-policy";
import type { Logger } from "../log";

// setTimeout holds at most 2^31-1 ms (~24.8 days); longer waits are taken in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;
const HOUR = 3_600_000;

export interface AutoRenewOptions {
  /** The certificate in use now. */
  current(): Validity;
  /** Whether there is a CA to renew from (ca_peer set, or this home holds the fleet CA). */
  canRenew(): boolean;
  /** Renews and puts the new certificate in use; throws to say why not. */
  renew(): Promise<void>;
  log: Logger;
  /** After a failed attempt, the next is this long after (default: an hour, or a twentieth of what is left). */
  retryMs?(validity: Validity, now: number): number;
  random?(): number;
}

export interface AutoRenew {
  /** Plans again from the certificate in use (another one was put in place, e.g. on SIGHUP). */
  replan(): void;
  stop(): void;
  /** The moment the next attempt is planned for (for tests and logs). */
  next(): Date | undefined;
}

/**
 * Renews this node's certificate by itself at about two thirds of its lifetime, with jitter (renewalTime), and
 * then plans the next renewal from the new certificate. A failed attempt is logged and retried; the certificate
 * in use stays until a new one is in place. Without a CA to renew from it does nothing (the expiry warnings
 * say what to do).
 */
export function startAutoRenew(options: AutoRenewOptions): AutoRenew {
  const { log } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let at: number | undefined;
  let stopped = false;
  const retryMs = options.retryMs ?? ((v, now) => Math.max(60_000, Math.min(HOUR, (v.notAfter.getTime() - now) / 20)));

  const wait = (until: number) => {
    if (stopped) return;
    at = until;
    clearTimeout(timer);
    timer = setTimeout(
      () => (Date.now() >= until ? void attempt() : wait(until)),
      Math.min(MAX_TIMER_MS, Math.max(0, until - Date.now())),
    );
    timer.unref?.();
  };

  const plan = () => wait(renewalTime(options.current(), (options.random ?? Math.random)()).getTime());

  const attempt = async () => {
    if (stopped) return;
    if (!options.canRenew()) return wait(Date.now() + 24 * HOUR);
    const before = options.current();
    try {
      await options.renew();
      plan();
    } catch (err) {
      const retry = retryMs(before, Date.now());
      log.warn("could not renew this node's certificate; the current one stays in use", {
        reason: (err as Error).message,
        expires: before.notAfter.toISOString(),
        retry_in_seconds: Math.round(retry / 1000),
      });
      wait(Date.now() + retry);
    }
  };

  plan();
  return {
    replan: () => plan(),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    next: () => (at === undefined ? undefined : new Date(at)),
  };
}
