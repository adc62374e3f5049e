import "reflect-metadata";
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createCa, issueLeaf } from "../../pki";
import { certificateCheck, checkReadiness, RENEW_WITHIN_DAYS, type CertificateDates } from "../../src/server/readiness";

const DAY = 86_400_000;

/** A CA and a leaf made by our PKI at `madeAt`, valid `days`, as the readiness check sees them. */
async function identity(madeAt: Date, days: number, caDays = 3650): Promise<CertificateDates> {
  const ca = await createCa({ name: "test fleet CA", now: madeAt, days: caDays });
  const leaf = await issueLeaf({ ca, name: "alpha", sans: [], days, now: madeAt });
  const c = new X509Certificate(leaf.certPem);
  const a = new X509Certificate(ca.certPem);
  return {
    name: "alpha",
    notBefore: c.validFromDate,
    notAfter: c.validToDate,
    ca: { notBefore: a.validFromDate, notAfter: a.validToDate },
  };
}

describe("the certificate check", () => {
  it("a certificate with a year left is valid, with its days left", async () => {
    const r = certificateCheck(await identity(new Date(), 365));
    expect(r).toMatchObject({ ok: true, daysLeft: 364 });
    expect(r.detail).toMatch(/^valid until .* \(364 days\)$/);
  });

  it("an expired certificate fails, saying when it expired and how to renew", async () => {
    const id = await identity(new Date(Date.now() - 40 * DAY), 30);
    const r = certificateCheck(id);
    expect(r.ok).toBe(false);
    expect(r.daysLeft).toBe(0);
    expect(r.detail).toContain(`the certificate of alpha expired on ${id.notAfter.toISOString()}`);
    expect(r.detail).toContain("a2a-node pki issue NAME --out FILE");
  });

  it("a certificate that ends within the renewal window is still valid, but says to renew", async () => {
    const r = certificateCheck(await identity(new Date(Date.now() - 25 * DAY), 30));
    expect(r.ok).toBe(true);
    expect(r.daysLeft).toBeLessThan(RENEW_WITHIN_DAYS);
    expect(r.detail).toMatch(/expires in 4 days: issue a new one/);
  });

  it("a certificate not valid yet fails, asking about the clock", async () => {
    const r = certificateCheck(await identity(new Date(Date.now() + 2 * DAY), 30));
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(/is not valid before .*clock/);
  });

  it("a certificate the fleet's revocation list revokes fails, naming its serial and the next step, however long it has left", async () => {
    const id = await identity(new Date(), 365);
    const at = new Date("2026-12-01T10:00:00.000Z");
    const r = certificateCheck({ ...id, revoked: { serial: "5A17", at } });
    expect(r).toMatchObject({ ok: false, revoked: at.toISOString(), daysLeft: 364 });
    expect(r.detail).toBe(
      "the certificate of alpha (serial 5A17) was revoked by the fleet CA on 2026-12-01T10:00:00.000Z: peers refuse this node; get a new identity from the CA machine (a2a-node pki issue alpha --replace --out FILE there)",
    );
  });

  it("the fleet CA's end counts when it comes first", async () => {
    const id = await identity(new Date(Date.now() - 10 * DAY), 30);
    // Our PKI never issues a leaf that outlives its CA; a CA renewed elsewhere, or a clock moved, can.
    id.ca.notAfter = new Date(Date.now() - DAY);
    const r = certificateCheck(id);
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(/^the fleet CA certificate expired/);
  });
});

describe("readiness", () => {
  const ok = { ok: true, detail: "fine" };
  it("adds the revocation check when the node enforces a list, and fails on it alone", async () => {
    const stale = { ok: false, detail: "stale" };
    const r = await checkReadiness({
      database: async () => ok,
      certificate: () => ok,
      model: async () => ok,
      revocation: () => stale,
    });
    expect(r).toEqual({
      ready: false,
      failed: ["revocation"],
      checks: { database: ok, certificate: ok, model: ok, revocation: stale },
    });
  });
  it("is ready when every check passes", async () => {
    const r = await checkReadiness({ database: async () => ok, certificate: () => ok, model: async () => ok });
    expect(r).toEqual({ ready: true, failed: [], checks: { database: ok, certificate: ok, model: ok } });
  });

  it.each(["database", "certificate", "model"] as const)("names %s when it alone fails", async (name) => {
    const bad = { ok: false, detail: `${name} is broken` };
    const r = await checkReadiness({
      database: async () => (name === "database" ? bad : ok),
      certificate: () => (name === "certificate" ? bad : ok),
      model: async () => (name === "model" ? bad : ok),
    });
    expect(r.ready).toBe(false);
    expect(r.failed).toEqual([name]);
    expect(r.checks[name]).toEqual(bad);
  });

  it("a check that throws or hangs fails as itself, not the whole answer", async () => {
    const r = await checkReadiness(
      {
        database: async () => {
          throw new Error("worker gone");
        },
        certificate: () => ok,
        model: (signal) =>
          new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("model timed out")))),
      },
      50,
    );
    expect(r.failed).toEqual(["database", "model"]);
    expect(r.checks.database.detail).toContain("worker gone");
    expect(r.checks.model.detail).toContain("model timed out");
  });
});
