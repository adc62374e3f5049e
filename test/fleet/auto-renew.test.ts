import { describe, expect, it } from "vitest";
import { startAutoRenew } from "../../src/fleet/auto-renew";
import type { Logger } from "../../src/log";

const DAY = 86_400_000;

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (level: string) => (m: string, f?: Record<string, unknown>) =>
    void lines.push(`${level} ${m} ${JSON.stringify(f ?? {})}`);
  return { lines, info: put("info"), warn: put("warn"), error: put("error") };
}

/** A certificate whose renewal time (2/3 of its life) is `dueInMs` from now. */
function cert(dueInMs: number, lifeMs = 30 * DAY) {
  const notBefore = new Date(Date.now() + dueInMs - (lifeMs * 2) / 3);
  return { notBefore, notAfter: new Date(notBefore.getTime() + lifeMs) };
}

describe("startAutoRenew", () => {
  it("renews once due, then plans the next renewal from the new certificate", async () => {
    let current = cert(-1000);
    let renewed!: () => void;
    const done = new Promise<void>((r) => (renewed = r));
    const log = recorder();
    const auto = startAutoRenew({
      current: () => current,
      canRenew: () => true,
      renew: async () => {
        current = cert(10 * DAY);
        renewed();
      },
      log,
      random: () => 0,
    });
    await done;
    // The next attempt is planned from the renewed certificate: ten days out.
    await new Promise<void>((r) => setImmediate(r));
    expect(Math.round(((auto.next()?.getTime() ?? 0) - Date.now()) / DAY)).toBe(10);
    auto.stop();
    expect(log.lines).toEqual([]);
  });

  it("plans with jitter: up to a twentieth of the lifetime early", () => {
    const c = cert(10 * DAY);
    const early = startAutoRenew({
      current: () => c,
      canRenew: () => true,
      renew: async () => {},
      log: recorder(),
      random: () => 1,
    });
    const late = startAutoRenew({
      current: () => c,
      canRenew: () => true,
      renew: async () => {},
      log: recorder(),
      random: () => 0,
    });
    expect((late.next()!.getTime() - early.next()!.getTime()) / DAY).toBeCloseTo(1.5, 3);
    early.stop();
    late.stop();
  });

  it("a failed attempt is logged and retried; the certificate stays until one succeeds", async () => {
    const current = cert(-1000);
    let attempts = 0;
    let succeeded!: () => void;
    const done = new Promise<void>((r) => (succeeded = r));
    const log = recorder();
    const auto = startAutoRenew({
      current: () => current,
      canRenew: () => true,
      renew: async () => {
        if (++attempts < 3) throw new Error("CA node unreachable");
        succeeded();
      },
      retryMs: () => 5,
      log,
    });
    await done;
    auto.stop();
    expect(attempts).toBe(3);
    expect(log.lines).toHaveLength(2);
    expect(log.lines[0]).toMatch(
      /^warn could not renew this node's certificate; the current one stays in use .*"reason":"CA node unreachable"/,
    );
  });

  it("without a CA to renew from it does not try, and looks again a day later", async () => {
    let asked!: () => void;
    const checked = new Promise<void>((r) => (asked = r));
    let renewCalls = 0;
    const auto = startAutoRenew({
      current: () => cert(-1000),
      canRenew: () => {
        asked();
        return false;
      },
      renew: async () => void renewCalls++,
      log: recorder(),
    });
    await checked;
    await new Promise<void>((r) => setImmediate(r));
    expect(renewCalls).toBe(0);
    expect(Math.round(((auto.next()?.getTime() ?? 0) - Date.now()) / 3_600_000)).toBe(24);
    auto.stop();
  });

  it("waits past the longest timer in steps (a year-long certificate)", () => {
    const auto = startAutoRenew({
      current: () => cert(200 * DAY, 365 * DAY),
      canRenew: () => true,
      renew: async () => {},
      log: recorder(),
      random: () => 0,
    });
    expect(Math.round((auto.next()!.getTime() - Date.now()) / DAY)).toBe(200);
    auto.stop();
  });
});
