/**
 * The CA's registry of what it issued: real SQLite files, real certificates from our PKI. Every path into the
 * fleet (issueBundle here; sign, renew and join elsewhere) goes through issueRecorded, which refuses a second
 * valid certificate for a name unless asked to replace it.
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import {
  CaRegistry,
  initPki,
  inspectCert,
  issueBundle,
  normalizeSerial,
  openCaRegistry,
  PkiError,
  readBundle,
} from "../../pki";
import { DAY_MS, mode, tempDirs } from "./helpers";

const tmp = tempDirs();

async function caHome(name = "alpha", now?: Date) {
  const paths = homePaths(join(tmp(), name));
  await initPki(paths, { name, now });
  return paths;
}

async function rejection(p: Promise<unknown>): Promise<PkiError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  return err as PkiError;
}

describe("CaRegistry", () => {
  it("is created 0600, and tightens a file others could read", () => {
    const path = join(tmp(), "reg.db");
    CaRegistry.open(path).close();
    expect(mode(path)).toBe(0o600);
    const loose = join(tmp(), "loose.db");
    writeFileSync(loose, "", { mode: 0o644 });
    CaRegistry.open(loose).close();
    expect(mode(loose)).toBe(0o600);
  });

  it("refuses a file that is not a registry, naming it", () => {
    const path = join(tmp(), "junk.db");
    writeFileSync(path, "this is not sqlite, just text long enough to have a header".repeat(10), { mode: 0o600 });
    expect(() => CaRegistry.open(path)).toThrow(
      expect.objectContaining({ code: "READ_FAILED", message: expect.stringContaining(path) }),
    );
  });

  it("records, finds, revokes once, and counts", () => {
    const reg = CaRegistry.open(join(tmp(), "r.db"));
    const now = new Date("2030-01-01T00:00:00Z");
    const base = { sans: ["beta"], notBefore: now, issuedAt: now, how: "bundle" as const };
    reg.record({
      ...base,
      name: "beta",
      serial: "0a1b",
      fingerprint256: "AA:01",
      notAfter: new Date(now.getTime() + DAY_MS),
    });
    reg.record({ ...base, name: "beta", serial: "0C", fingerprint256: "AA:02", notAfter: new Date(now.getTime() - 1) });
    reg.record({
      ...base,
      name: "gamma",
      serial: "0D",
      fingerprint256: "AA:03",
      notAfter: new Date(now.getTime() + DAY_MS),
    });
    expect(reg.validFor("beta", now).map((c) => c.serial)).toEqual(["A1B"]);
    expect(reg.bySerial("a1b")?.name).toBe("beta");
    expect(reg.bySerial("00:0A:1B")?.name).toBe("beta");
    expect(reg.byFingerprint("aa:03")?.name).toBe("gamma");

    const later = new Date(now.getTime() + 1000);
    expect(reg.revoke(["A1B", "FFFF"], later, "lost").map((c) => c.serial)).toEqual(["A1B"]);
    // Revoking again keeps the first date and reason.
    expect(reg.revoke(["A1B"], new Date(now.getTime() + 5000), "again")).toEqual([]);
    expect(reg.bySerial("A1B")).toMatchObject({ revokedAt: later, revokeReason: "lost" });
    expect(reg.validFor("beta", now)).toEqual([]);
    expect(reg.revokedUnexpired(now).map((c) => c.serial)).toEqual(["A1B"]);
    expect(reg.revokedUnexpired(new Date(now.getTime() + 2 * DAY_MS))).toEqual([]);

    expect([reg.next("crl"), reg.next("crl"), reg.next("other")]).toEqual([1, 2, 1]);
    reg.close();
  });

  it("lets a token be used once, and not after it expired", () => {
    const reg = CaRegistry.open(join(tmp(), "t.db"));
    const now = new Date("2030-01-01T00:00:00Z");
    const token = {
      name: "beta",
      sans: [],
      days: 30,
      replace: false,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3600_000),
    };
    reg.addToken({ ...token, hash: "h1" });
    reg.addToken({ ...token, hash: "h2" });
    expect(reg.useToken("h1", now)).toBe(true);
    expect(reg.useToken("h1", now)).toBe(false);
    expect(reg.token("h1")?.usedAt).toEqual(now);
    expect(reg.useToken("h2", new Date(now.getTime() + 3600_000))).toBe(false);
    expect(reg.useToken("nope", now)).toBe(false);
    reg.close();
  });

  it("normalizes serials to uppercase hex without leading zeros", () => {
    expect(normalizeSerial("00:0a:FF")).toBe("AFF");
    expect(normalizeSerial("0")).toBe("0");
    expect(normalizeSerial("4A0B")).toBe("4A0B");
  });
});

describe("the CA records what it issues", () => {
  it("init-pki records the CA node's own certificate", async () => {
    const paths = await caHome();
    const reg = openCaRegistry(paths);
    const own = inspectCert(readFileSync(paths.nodeCert, "utf8"));
    expect(reg.list()).toEqual([
      expect.objectContaining({
        name: "alpha",
        serial: own.serialNumber,
        fingerprint256: own.fingerprint256,
        how: "init",
        sans: own.sans,
      }),
    ]);
    reg.close();
  });

  it("a registry made for an older CA home starts with that home's own certificate", async () => {
    const paths = await caHome();
    rmSync(paths.caRegistry);
    const reg = openCaRegistry(paths);
    expect(reg.list().map((c) => [c.name, c.how])).toEqual([["alpha", "init"]]);
    reg.close();
  });

  it("pki issue records the bundle's certificate with its serial, fingerprint, SANs and expiry", async () => {
    const paths = await caHome();
    const out = join(tmp(), "beta.bundle");
    const r = await issueBundle(paths, { name: "beta", sans: ["10.0.0.7"], days: 30, out });
    const cert = inspectCert((await readBundle(out)).cert);
    expect(r.serial).toBe(cert.serialNumber);
    const reg = openCaRegistry(paths);
    expect(reg.bySerial(cert.serialNumber)).toMatchObject({
      name: "beta",
      fingerprint256: cert.fingerprint256,
      sans: ["beta", "localhost", "127.0.0.1", "10.0.0.7"],
      notAfter: cert.notAfter,
      how: "bundle",
    });
    reg.close();
  });

  it("refuses a second certificate for a name that holds a valid one, and writes nothing", async () => {
    const paths = await caHome();
    const first = await issueBundle(paths, { name: "beta", out: join(tmp(), "b1") });
    const out = join(tmp(), "b2");
    const err = await rejection(issueBundle(paths, { name: "beta", out }));
    expect(err.code).toBe("NAME_HAS_CERT");
    expect(err.message).toBe(
      `"beta" already has a valid certificate (serial ${first.serial}, expires ${first.notAfter.toISOString()})`,
    );
    expect(err.hint).toMatch(/--replace/);
    expect(existsSync(out)).toBe(false);
    const reg = openCaRegistry(paths);
    expect(reg.list().filter((c) => c.name === "beta")).toHaveLength(1);
    reg.close();
  });

  it("the CA node's own name counts too", async () => {
    const paths = await caHome();
    expect((await rejection(issueBundle(paths, { name: "alpha", out: join(tmp(), "a") }))).code).toBe("NAME_HAS_CERT");
  });

  it("--replace issues the new certificate and revokes the old one in one step", async () => {
    const paths = await caHome();
    const first = await issueBundle(paths, { name: "beta", out: join(tmp(), "b1") });
    const second = await issueBundle(paths, { name: "beta", out: join(tmp(), "b2"), replace: true });
    expect(second.revoked.map((c) => c.serial)).toEqual([first.serial]);
    const reg = openCaRegistry(paths);
    expect(reg.bySerial(first.serial)).toMatchObject({
      revokeReason: `replaced by ${second.serial}`,
      revokedAt: expect.any(Date),
    });
    expect(reg.validFor("beta", new Date()).map((c) => c.serial)).toEqual([second.serial]);
    reg.close();
  });

  it("an expired certificate does not block a new one", async () => {
    const old = new Date(Date.now() - 40 * DAY_MS);
    const paths = await caHome("alpha", old);
    await issueBundle(paths, { name: "beta", days: 10, out: join(tmp(), "b1"), now: old });
    const r = await issueBundle(paths, { name: "beta", out: join(tmp(), "b2") });
    expect(r.revoked).toEqual([]);
  });

  it("two issues of one name racing: one wins, the other is refused and leaves no bundle", async () => {
    const paths = await caHome();
    const outs = [join(tmp(), "r1"), join(tmp(), "r2")];
    const results = await Promise.allSettled(outs.map((out) => issueBundle(paths, { name: "beta", out })));
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ code: "NAME_HAS_CERT" });
    expect(outs.filter((o) => existsSync(o))).toHaveLength(1);
    const reg = openCaRegistry(paths);
    expect(reg.validFor("beta", new Date())).toHaveLength(1);
    reg.close();
  });

  it("a bundle that cannot be written records nothing", async () => {
    const paths = await caHome();
    const err = await p(issueBundle(paths, { name: "beta", out: join(tmp(), "no-such-dir", "b") }));
    expect(err).toBeTruthy();
    const reg = openCaRegistry(paths);
    expect(reg.list().map((c) => c.name)).toEqual(["alpha"]);
    reg.close();
  });
});

function p(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e) => e,
  );
}
