/**
 * Renewal on the CA side (renewRecorded: who may renew what) and on the node (the files replaced so that a crash
 * never leaves a key without its certificate). Real CA homes, real certificates and requests.
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { ensureHome, homePaths } from "../../src/home";
import {
  createCsr,
  initPki,
  inspectCert,
  installBundle,
  installRenewedIdentity,
  issueBundle,
  loadNodeIdentity,
  openCaRegistry,
  PkiError,
  recoverInterruptedRenewal,
  renewRecorded,
  revoke,
} from "../../pki";
import { DAY_MS, listFiles, mode, tempDirs } from "./helpers";

const tmp = tempDirs();

async function fleet(opts: { days?: number; now?: Date } = {}) {
  const ca = homePaths(join(tmp(), "alpha"));
  await initPki(ca, { name: "alpha", now: opts.now });
  const beta = homePaths(join(tmp(), "beta"));
  const bundle = join(tmp(), "beta.bundle");
  await issueBundle(ca, { name: "beta", sans: ["10.0.0.7"], days: opts.days ?? 30, out: bundle, now: opts.now });
  await installBundle(ensureHome(beta), bundle, { now: opts.now });
  return { ca, beta, betaId: await loadNodeIdentity(beta, { now: opts.now }) };
}

async function refusal(p: Promise<unknown>): Promise<PkiError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  return err as PkiError;
}

describe("renewRecorded", () => {
  it("issues the same name, SANs and lifetime for the new key, recorded as a renewal; the old one stays valid", async () => {
    const { ca, betaId } = await fleet();
    const { csrPem, keyPem } = await createCsr({ name: "beta", sans: ["ignored.example"] });
    const reg = openCaRegistry(ca);
    const r = await renewRecorded(ca, reg, {
      csrPem,
      currentCertPem: betaId.certPem,
      presented: { name: "beta", fingerprint256: betaId.fingerprint256 },
    });
    const cert = inspectCert(r.certPem);
    expect(cert.subjectCn).toBe("beta");
    expect(cert.sans).toEqual(betaId.sans);
    expect(cert.sans).not.toContain("ignored.example");
    expect(Math.round((cert.notAfter.getTime() - cert.notBefore.getTime()) / DAY_MS)).toBe(30);
    expect(new X509Certificate(r.certPem).checkPrivateKey((await import("node:crypto")).createPrivateKey(keyPem))).toBe(
      true,
    );
    expect(r.revoked).toEqual([]);
    expect(reg.bySerial(cert.serialNumber)).toMatchObject({ how: "renew", name: "beta" });
    expect(reg.bySerial(betaId.serialNumber)?.revokedAt).toBeUndefined();
    expect(reg.validFor("beta", new Date())).toHaveLength(2);
    reg.close();
  });

  it.each([
    [
      "a certificate the connection did not present",
      async (b: Awaited<ReturnType<typeof fleet>>) => ({ presented: { name: "beta", fingerprint256: "AA:BB" } }),
      /the certificate sent is not the one this connection presented/,
    ],
    [
      "a request for another name",
      async () => ({ csrPem: (await createCsr({ name: "alpha", sans: [] })).csrPem }),
      /the request is for "alpha", but the certificate renewed is "beta"/,
    ],
    [
      "a name other than the connection's",
      async () => ({ presented: { name: "gamma" } }),
      /the certificate is for "beta", not "gamma"/,
    ],
  ])("refuses %s (RENEW_REFUSED)", async (_what, change, reason) => {
    const b = await fleet();
    const reg = openCaRegistry(b.ca);
    const base = {
      csrPem: (await createCsr({ name: "beta", sans: [] })).csrPem,
      currentCertPem: b.betaId.certPem,
      presented: { name: "beta", fingerprint256: b.betaId.fingerprint256 },
    };
    const changed = await change(b);
    const err = await refusal(
      renewRecorded(b.ca, reg, {
        ...base,
        ...changed,
        presented: { ...base.presented, ...(changed as { presented?: object }).presented },
      }),
    );
    expect(err.code).toBe("RENEW_REFUSED");
    expect(err.message).toMatch(reason);
    expect(reg.list().filter((c) => c.how === "renew")).toEqual([]);
    reg.close();
  });

  it("refuses a revoked certificate, and an expired one", async () => {
    const { ca, betaId } = await fleet();
    const { csrPem } = await createCsr({ name: "beta", sans: [] });
    const presented = { name: "beta", fingerprint256: betaId.fingerprint256 };
    const later = new Date(betaId.notAfter.getTime() + 1000);
    const reg = openCaRegistry(ca);
    expect(
      (await refusal(renewRecorded(ca, reg, { csrPem, currentCertPem: betaId.certPem, presented, now: later }))).code,
    ).toBe("EXPIRED");
    // Only the CA's own home renewing its own certificate passes acceptExpired: then it is renewed, same lifetime.
    const late = await renewRecorded(ca, reg, {
      csrPem,
      currentCertPem: betaId.certPem,
      presented,
      now: later,
      acceptExpired: true,
    });
    expect(inspectCert(late.certPem).notAfter.getTime()).toBeGreaterThan(later.getTime());
    reg.close();
    await revoke(ca, { target: "beta" });
    const reg2 = openCaRegistry(ca);
    expect(
      (await refusal(renewRecorded(ca, reg2, { csrPem, currentCertPem: betaId.certPem, presented }))).message,
    ).toMatch(/^renewal refused: the certificate \(serial [0-9A-F]+\) was revoked on /);
    // Revoked stays refused, expired or not.
    expect(
      (
        await refusal(
          renewRecorded(ca, reg2, {
            csrPem,
            currentCertPem: betaId.certPem,
            presented,
            now: later,
            acceptExpired: true,
          }),
        )
      ).message,
    ).toMatch(/was revoked on /);
    reg2.close();
  });

  it("shortens the lifetime to what the CA has left", async () => {
    const ca = homePaths(join(tmp(), "alpha"));
    await initPki(ca, { name: "alpha", caDays: 400 });
    const b = join(tmp(), "b.bundle");
    await issueBundle(ca, { name: "beta", days: 365, out: b });
    const betaHome = homePaths(join(tmp(), "beta"));
    await installBundle(ensureHome(betaHome), b);
    const id = await loadNodeIdentity(betaHome);
    const reg = openCaRegistry(ca);
    const later = new Date(Date.now() + 300 * DAY_MS);
    const r = await renewRecorded(ca, reg, {
      csrPem: (await createCsr({ name: "beta", sans: [] })).csrPem,
      currentCertPem: id.certPem,
      presented: { name: "beta", fingerprint256: id.fingerprint256 },
      now: later,
    });
    expect(Math.round((inspectCert(r.certPem).notAfter.getTime() - later.getTime()) / DAY_MS)).toBe(99);
    reg.close();
  });
});

describe("installRenewedIdentity and recovery", () => {
  async function pair() {
    const { ca, beta } = await fleet();
    const { csrPem, keyPem } = await createCsr({ name: "beta", sans: [] });
    const id = await loadNodeIdentity(beta);
    const reg = openCaRegistry(ca);
    const r = await renewRecorded(ca, reg, {
      csrPem,
      currentCertPem: id.certPem,
      presented: { name: "beta", fingerprint256: id.fingerprint256 },
    });
    reg.close();
    return { beta, old: { certPem: id.certPem, keyPem: id.keyPem }, renewed: { certPem: r.certPem, keyPem } };
  }

  it("replaces the pair, key 0600, and leaves no side files", async () => {
    const { beta, renewed } = await pair();
    installRenewedIdentity(beta, renewed);
    expect(readFileSync(beta.nodeKey, "utf8")).toBe(renewed.keyPem);
    expect(readFileSync(beta.nodeCert, "utf8")).toBe(renewed.certPem);
    expect(mode(beta.nodeKey)).toBe(0o600);
    expect(mode(beta.nodeCert)).toBe(0o644);
    expect(listFiles(beta.root)).toEqual(["certs/ca.crt", "certs/node.crt", "secrets/node.key"]);
    expect((await loadNodeIdentity(beta)).fingerprint256).toBe(inspectCert(renewed.certPem).fingerprint256);
  });

  it("a crash after both new files were written: the next load completes the renewal", async () => {
    const { beta, renewed } = await pair();
    writeFileSync(`${beta.nodeKey}.new`, renewed.keyPem, { mode: 0o600 });
    writeFileSync(`${beta.nodeCert}.new`, renewed.certPem);
    const id = await loadNodeIdentity(beta);
    expect(id.fingerprint256).toBe(inspectCert(renewed.certPem).fingerprint256);
    expect(listFiles(beta.root)).toEqual(["certs/ca.crt", "certs/node.crt", "secrets/node.key"]);
  });

  it("a crash between the two renames (new key, old certificate): the next load puts the new certificate in", async () => {
    const { beta, old, renewed } = await pair();
    writeFileSync(beta.nodeKey, renewed.keyPem, { mode: 0o600 });
    writeFileSync(`${beta.nodeCert}.new`, renewed.certPem);
    writeFileSync(`${beta.nodeKey}.old`, old.keyPem, { mode: 0o600 });
    writeFileSync(`${beta.nodeCert}.old`, old.certPem);
    expect(recoverInterruptedRenewal(beta)).toBe("completed");
    expect((await loadNodeIdentity(beta)).fingerprint256).toBe(inspectCert(renewed.certPem).fingerprint256);
    expect(listFiles(beta.root)).toEqual(["certs/ca.crt", "certs/node.crt", "secrets/node.key"]);
  });

  it("a crash before the new certificate was written: the lone new key is dropped, the old pair stays", async () => {
    const { beta, old, renewed } = await pair();
    writeFileSync(`${beta.nodeKey}.new`, renewed.keyPem, { mode: 0o600 });
    expect(recoverInterruptedRenewal(beta)).toBe("discarded");
    expect(existsSync(`${beta.nodeKey}.new`)).toBe(false);
    expect((await loadNodeIdentity(beta)).certPem).toBe(old.certPem);
  });

  it("does nothing when no renewal was under way", async () => {
    const { beta } = await pair();
    expect(recoverInterruptedRenewal(beta)).toBeUndefined();
  });
});
