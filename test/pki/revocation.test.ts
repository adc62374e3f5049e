/**
 * Revocation lists: signed by the CA with @peculiar/x509, read by the node with node:crypto and a small DER
 * walker, and checked by OpenSSL too. Home-level revoke, export and import on real CA homes.
 */
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import {
  DEFAULT_CRL_VALID_FOR_MS,
  createCa,
  exportCrl,
  importCrl,
  initPki,
  installBundle,
  issueBundle,
  makeCrl,
  openCaRegistry,
  PkiError,
  readRevocationList,
  revoke,
} from "../../pki";
import { FleetMembership } from "../../pki/fleet-member";
import { x509 } from "../../pki/x509";
import { X509Certificate } from "node:crypto";
import { ensureHome } from "../../src/home";
import { DAY_MS, makeFleet, mode, tempDirs } from "./helpers";
import { importPrivateKeyPem } from "../../pki/keys";
import type { CertAndKey } from "../../pki";

const tmp = tempDirs();

function rejection(f: () => unknown): PkiError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(PkiError);
    return err as PkiError;
  }
  throw new Error("did not throw");
}

describe("makeCrl and readRevocationList", () => {
  it("round-trips serials, dates and the CRL number", async () => {
    const { ca, alice, bob } = await makeFleet();
    const at = new Date("2030-01-02T03:04:05Z");
    const serialA = new X509Certificate(alice.certPem).serialNumber;
    const signedAt = new Date();
    const pem = await makeCrl(
      ca,
      [
        { serial: serialA, revokedAt: at },
        { serial: "0ABC", revokedAt: at },
      ],
      300,
      signedAt,
    );
    expect(pem).toMatch(/^-----BEGIN X509 CRL-----\n/);
    const list = readRevocationList(pem, ca.certPem);
    expect(list.number).toBe(300);
    expect([...list.revoked.keys()]).toEqual([serialA.toUpperCase().replace(/^0+/, ""), "ABC"]);
    expect(list.revoked.get("ABC")).toEqual(at);
    // Valid for four of the default refresh periods, not for the CA's lifetime: a list that old is stale.
    expect(list.thisUpdate.getTime()).toBe(Math.floor(signedAt.getTime() / 1000) * 1000);
    expect(list.nextUpdate!.getTime() - list.thisUpdate.getTime()).toBe(DEFAULT_CRL_VALID_FOR_MS);
    const long = readRevocationList(await makeCrl(ca, [], 301, signedAt, 10 * 365 * 86_400_000), ca.certPem);
    expect(long.nextUpdate).toEqual(new X509Certificate(ca.certPem).validToDate); // never past the CA's own end
    expect(list.revoked.has(new X509Certificate(bob.certPem).serialNumber)).toBe(false);
  });

  it("reads an empty list", async () => {
    const { ca } = await makeFleet();
    const list = readRevocationList(await makeCrl(ca, [], 1), ca.certPem);
    expect(list.revoked.size).toBe(0);
    expect(list.number).toBe(1);
  });

  it.skipIf(spawnSync("openssl", ["version"]).status !== 0)(
    "passes OpenSSL's check, and OpenSSL refuses the revoked certificate with it",
    async () => {
      const { ca, alice, bob } = await makeFleet();
      const dir = tmp();
      const serial = new X509Certificate(alice.certPem).serialNumber;
      writeFileSync(join(dir, "ca.crt"), ca.certPem);
      writeFileSync(join(dir, "crl.pem"), await makeCrl(ca, [{ serial, revokedAt: new Date() }], 7));
      writeFileSync(join(dir, "alice.crt"), alice.certPem);
      writeFileSync(join(dir, "bob.crt"), bob.certPem);
      const crl = spawnSync(
        "openssl",
        ["crl", "-in", join(dir, "crl.pem"), "-CAfile", join(dir, "ca.crt"), "-noout", "-text"],
        { encoding: "utf8" },
      );
      expect(crl.stderr).toMatch(/verify OK/);
      expect(crl.stdout).toMatch(/X509v3 CRL Number: *\n *7/);
      const verify = (who: string) =>
        spawnSync(
          "openssl",
          ["verify", "-crl_check", "-CAfile", join(dir, "ca.crt"), "-CRLfile", join(dir, "crl.pem"), join(dir, who)],
          { encoding: "utf8" },
        );
      expect(verify("bob.crt").status).toBe(0);
      const refused = verify("alice.crt");
      expect(refused.status).not.toBe(0);
      expect(refused.stdout + refused.stderr).toMatch(/certificate revoked/);
    },
  );

  it.each([
    [
      "another CA under our CA's name",
      async (ca: CertAndKey) => makeCrl(await createCa({ name: "test fleet CA" }), [], 1),
      /its signature does not verify with the fleet CA's key/,
    ],
    ["another CA", async () => makeCrl(await createCa({ name: "other CA" }), [], 1), /its issuer is not the fleet CA/],
    [
      "a flipped bit in the signed part",
      async (ca: CertAndKey) => {
        const der = Buffer.from(
          x509.PemConverter.decodeFirst(await makeCrl(ca, [{ serial: "0ABC", revokedAt: new Date() }], 1)),
        );
        der[der.indexOf(Buffer.from([0x02, 0x02, 0x0a, 0xbc])) + 3] ^= 0x01; // the serial ABC -> ABD
        return x509.PemConverter.encode(der, "X509 CRL");
      },
      /its signature does not verify/,
    ],
    ["garbage", async () => "garbage", /not one PEM revocation list/],
    ["two lists", async (ca: CertAndKey) => (await makeCrl(ca, [], 1)).repeat(2), /not one PEM revocation list/],
    ["a certificate", async (ca: CertAndKey) => ca.certPem, /not one PEM revocation list/],
    [
      "truncated DER",
      async (ca: CertAndKey) =>
        x509.PemConverter.encode(
          Buffer.from(x509.PemConverter.decodeFirst(await makeCrl(ca, [], 1))).subarray(0, 60),
          "X509 CRL",
        ),
      /it does not parse \(truncated DER\)/,
    ],
    [
      "no CRL number",
      async (ca: CertAndKey) => {
        const crl = await x509.X509CrlGenerator.create({
          issuer: new x509.X509Certificate(ca.certPem).subjectName,
          signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
          signingKey: await importPrivateKeyPem(ca.keyPem),
        });
        return x509.PemConverter.encode(crl.rawData, "X509 CRL");
      },
      /it has no CRL number/,
    ],
    [
      "an unknown critical extension (a delta list)",
      async (ca: CertAndKey) => {
        const crl = await x509.X509CrlGenerator.create({
          issuer: new x509.X509Certificate(ca.certPem).subjectName,
          signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
          signingKey: await importPrivateKeyPem(ca.keyPem),
          extensions: [
            new x509.Extension("2.5.29.20", false, Uint8Array.from([2, 1, 5])),
            new x509.Extension("2.5.29.27", true, Uint8Array.from([2, 1, 4])),
          ],
        });
        return x509.PemConverter.encode(crl.rawData, "X509 CRL");
      },
      /critical extension this node does not know \(551d1b\)/,
    ],
  ])("refuses %s with BAD_CRL", async (_what, make, reason) => {
    const { ca } = await makeFleet();
    const pem = await make(ca);
    const e = rejection(() => readRevocationList(pem, ca.certPem, "crl.pem"));
    expect(e.code).toBe("BAD_CRL");
    expect(e.message).toMatch(/^crl\.pem is not a revocation list of this fleet: /);
    expect(e.message).toMatch(reason);
  });

  it("a fleet member's certificate on the list is refused by FleetMembership", async () => {
    const { ca, alice, bob } = await makeFleet();
    const list = readRevocationList(
      await makeCrl(
        ca,
        [{ serial: new X509Certificate(alice.certPem).serialNumber, revokedAt: new Date("2030-01-01T00:00:00Z") }],
        2,
      ),
      ca.certPem,
    );
    const fleet = new FleetMembership(ca.certPem, (serial) => list.revoked.get(serial));
    const verdict = fleet.check({ raw: new X509Certificate(alice.certPem).raw, subject: { CN: "alice" } });
    expect(verdict).toEqual({
      refused: expect.stringMatching(/^its certificate \(serial [0-9A-F]+\) was revoked on 2030-01-01T00:00:00\.000Z$/),
      revoked: true,
    });
    expect(fleet.check({ raw: new X509Certificate(bob.certPem).raw, subject: { CN: "bob" } })).toMatchObject({
      member: { name: "bob" },
    });
  });
});

describe("revoke, export-crl and import-crl on real homes", () => {
  async function fleetHomes() {
    const ca = homePaths(join(tmp(), "alpha"));
    await initPki(ca, { name: "alpha" });
    const beta = homePaths(join(tmp(), "beta"));
    const bundle = join(tmp(), "beta.bundle");
    const issued = await issueBundle(ca, { name: "beta", out: bundle });
    await installBundle(ensureHome(beta), bundle);
    return { ca, beta, betaSerial: issued.serial };
  }

  it("revoking a name records it and signs a list the CA home enforces (0644)", async () => {
    const { ca, betaSerial } = await fleetHomes();
    const r = await revoke(ca, { target: "beta", reason: "laptop stolen" });
    expect(r.revoked.map((c) => c.serial)).toEqual([betaSerial]);
    expect(r.already).toEqual([]);
    expect(mode(ca.crl)).toBe(0o644);
    const list = readRevocationList(readFileSync(ca.crl, "utf8"), readFileSync(ca.caCert, "utf8"));
    expect([...list.revoked.keys()]).toEqual([betaSerial]);
    expect(list.number).toBe(r.crl.number);
    const reg = openCaRegistry(ca);
    expect(reg.bySerial(betaSerial)).toMatchObject({ revokeReason: "laptop stolen", revokedAt: expect.any(Date) });
    reg.close();

    const again = await revoke(ca, { target: betaSerial.toLowerCase() });
    expect(again.revoked).toEqual([]);
    expect(again.already.map((c) => c.serial)).toEqual([betaSerial]);
    expect(again.crl.number).toBeGreaterThan(r.crl.number);
  });

  it("refuses a name or serial the CA never issued", async () => {
    const { ca } = await fleetHomes();
    const err = await revoke(ca, { target: "nobody" }).catch((e) => e);
    expect(err).toMatchObject({
      code: "NOT_ISSUED",
      message: 'this CA has no record of a certificate named "nobody" or with serial nobody',
    });
    expect(await revoke(ca, { target: "ABCDEF" }).catch((e) => e.code)).toBe("NOT_ISSUED");
  });

  it("issue --replace publishes a list with the replaced certificate", async () => {
    const { ca, betaSerial } = await fleetHomes();
    await issueBundle(ca, { name: "beta", out: join(tmp(), "b2"), replace: true });
    expect([
      ...readRevocationList(readFileSync(ca.crl, "utf8"), readFileSync(ca.caCert, "utf8")).revoked.keys(),
    ]).toEqual([betaSerial]);
  });

  it("a list leaves out revoked certificates that have expired", async () => {
    const ca = homePaths(join(tmp(), "alpha"));
    const past = new Date(Date.now() - 40 * DAY_MS);
    await initPki(ca, { name: "alpha", now: past });
    await issueBundle(ca, { name: "old", days: 10, out: join(tmp(), "o"), now: past });
    const r = await revoke(ca, { target: "old", now: new Date(past.getTime() + DAY_MS) });
    expect(r.revoked).toHaveLength(1);
    expect(r.crl.revoked.size).toBe(1);
    const later = await exportCrl(ca, { out: join(tmp(), "now.crl") });
    expect(later.revoked.size).toBe(0);
  });

  it("export then import carries the list to a machine the CA cannot reach; an older list is refused", async () => {
    const { ca, beta, betaSerial } = await fleetHomes();
    const empty = join(tmp(), "empty.crl");
    const first = await exportCrl(ca, { out: empty });
    expect(first.revoked.size).toBe(0);
    expect(importCrl(beta, empty)).toMatchObject({ changed: true });
    expect(importCrl(beta, empty)).toMatchObject({ changed: false });

    await revoke(ca, { target: "beta" });
    const out = join(tmp(), "fleet.crl");
    const second = await exportCrl(ca, { out });
    expect(second.number).toBeGreaterThan(first.number);
    expect(await exportCrl(ca, { out }).catch((e) => e.code)).toBe("FILE_EXISTS");
    expect(importCrl(beta, out)).toMatchObject({ changed: true });
    expect([
      ...readRevocationList(readFileSync(beta.crl, "utf8"), readFileSync(beta.caCert, "utf8")).revoked.keys(),
    ]).toEqual([betaSerial]);

    const stale = rejection(() => importCrl(beta, empty));
    expect(stale.code).toBe("STALE_CRL");
    expect(stale.message).toBe(
      `${empty} is older than the revocation list installed here (number ${first.number}, installed ${second.number})`,
    );

    // A non-CA home exports the list it has.
    const copy = join(tmp(), "copy.crl");
    expect((await exportCrl(beta, { out: copy })).number).toBe(second.number);
    const other = homePaths(join(tmp(), "other"));
    await initPki(other, { name: "other" });
    expect(rejection(() => importCrl(other, out)).code).toBe("BAD_CRL");
  });

  it("export on a home with no list says so", async () => {
    const { beta } = await fleetHomes();
    expect(await exportCrl(beta, { out: join(tmp(), "x") }).catch((e) => e.code)).toBe("NO_CRL");
  });
});
