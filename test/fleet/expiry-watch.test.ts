import { describe, expect, it } from "vitest";
import { watchExpiry, type WatchedIdentity } from "../../src/fleet/expiry-watch";
import { expiryLevel, needsRenewal, renewalDue, renewalTime } from "../../pki/renewal-policy";
import type { Logger } from "../../src/log";

const DAY = 86_400_000;
const T0 = new Date("2030-01-01T00:00:00Z");
const at = (days: number) => new Date(T0.getTime() + days * DAY);

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (level: string) => (m: string, f?: Record<string, unknown>) =>
    void lines.push(`${level} ${m} ${JSON.stringify(f ?? {})}`);
  return { lines, info: put("info"), warn: put("warn"), error: put("error") };
}

const identity = (days: number, caDays = 3650): WatchedIdentity => ({
  name: "beta",
  notBefore: T0,
  notAfter: at(days),
  ca: { notBefore: T0, notAfter: at(caDays) },
});

describe("renewal policy", () => {
  it("is due at two thirds of the lifetime", () => {
    expect(renewalDue({ notBefore: T0, notAfter: at(30) })).toEqual(at(20));
    expect(needsRenewal({ notBefore: T0, notAfter: at(30) }, at(19.9))).toBe(false);
    expect(needsRenewal({ notBefore: T0, notAfter: at(30) }, at(20))).toBe(true);
    expect(needsRenewal({ notBefore: T0, notAfter: at(30) }, at(31))).toBe(true);
    expect(needsRenewal({ notBefore: T0, notAfter: at(30) }, at(1), 29)).toBe(true);
    expect(needsRenewal({ notBefore: T0, notAfter: at(30) }, at(1), 28)).toBe(false);
  });

  it("the daemon's renewal time falls between 61.7% and 66.7% of the lifetime", () => {
    const c = { notBefore: T0, notAfter: at(30) };
    expect(renewalTime(c, 0)).toEqual(at(20));
    expect(renewalTime(c, 1)).toEqual(at(20 - 1.5));
    const t = renewalTime(c).getTime();
    expect(t).toBeGreaterThanOrEqual(at(18.5).getTime());
    expect(t).toBeLessThanOrEqual(at(20).getTime());
  });

  it("levels: ok, renew past 2/3, urgent in the last week (or tenth), expired", () => {
    const year = { notBefore: T0, notAfter: at(365) };
    expect(expiryLevel(year, at(200))).toBe("ok");
    expect(expiryLevel(year, at(250))).toBe("renew");
    expect(expiryLevel(year, at(358.5))).toBe("urgent");
    expect(expiryLevel(year, at(366))).toBe("expired");
    const month = { notBefore: T0, notAfter: at(30) };
    expect(expiryLevel(month, at(25))).toBe("renew");
    expect(expiryLevel(month, at(27.5))).toBe("urgent");
  });
});

describe("watchExpiry", () => {
  it("says nothing while all is well", () => {
    const log = recorder();
    watchExpiry(() => identity(365), log, { now: () => at(10) }).stop();
    expect(log.lines).toEqual([]);
  });

  it("warns at start once renewal is due, and errors near and past the end", () => {
    let now = at(21);
    const log = recorder();
    const w = watchExpiry(() => identity(30), log, { now: () => now });
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatch(
      /^warn this node's certificate is past two thirds of its lifetime and should be renewed /,
    );
    expect(log.lines[0]).toContain('"days_left":9');
    now = at(28);
    w.check();
    expect(log.lines[1]).toMatch(
      /^error this node's certificate expires soon; peers will refuse it then .*"days_left":2/,
    );
    now = at(31);
    w.check();
    expect(log.lines[2]).toMatch(/^error this node's certificate has expired; peers refuse it /);
    w.stop();
  });

  it("warns when the fleet CA has under 90 days left", () => {
    const log = recorder();
    watchExpiry(() => identity(30, 100), log, { now: () => at(20 - 10) }).stop();
    expect(log.lines).toEqual([expect.stringMatching(/^warn the fleet CA certificate expires soon; .*"days_left":90/)]);
  });

  it("checks again on its interval", async () => {
    const log = recorder();
    let checks = 0;
    let thirdCheck!: () => void;
    const third = new Promise<void>((resolve) => (thirdCheck = resolve));
    const w = watchExpiry(
      () => {
        if (++checks === 3) thirdCheck();
        return identity(30);
      },
      log,
      { now: () => at(21), intervalMs: 5 },
    );
    await third;
    w.stop();
    expect(log.lines.length).toBeGreaterThanOrEqual(3);
  });
});
