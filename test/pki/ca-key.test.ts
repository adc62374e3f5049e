/** The fleet CA key under a passphrase: encrypted PKCS#8 on disk, decrypted in memory only to sign. */
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import { initPki, issueBundle, PkiError, protectCaKey, readCaKey, revoke } from "../../pki";
import { mode, tempDirs } from "./helpers";

const tmp = tempDirs();
const PASS = "correct horse battery staple";

describe("an encrypted CA key", () => {
  it("init-pki writes it encrypted (0600); signing needs the passphrase, and a wrong one is refused", async () => {
    const paths = homePaths(join(tmp(), "alpha"));
    await initPki(paths, { name: "alpha", caPassphrase: PASS });
    const onDisk = readFileSync(paths.caKey, "utf8");
    expect(onDisk).toMatch(/^-----BEGIN ENCRYPTED PRIVATE KEY-----\n/);
    expect(mode(paths.caKey)).toBe(0o600);
    expect(readFileSync(paths.nodeKey, "utf8")).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);

    const locked = await issueBundle(paths, { name: "beta", out: join(tmp(), "b") }).catch((e) => e);
    expect(locked).toBeInstanceOf(PkiError);
    expect(locked).toMatchObject({
      code: "CA_KEY_LOCKED",
      message: `cannot use the fleet CA key ${paths.caKey}: it is encrypted and no passphrase was given`,
    });
    expect(locked.hint).toMatch(/A2A_NODE_CA_PASSPHRASE/);
    const wrong = await issueBundle(
      { ...paths, unlock: async () => "not the passphrase" },
      { name: "beta", out: join(tmp(), "b") },
    ).catch((e) => e);
    expect(wrong.message).toMatch(/the passphrase does not open it$/);

    const asked: string[] = [];
    const unlock = async () => {
      asked.push("asked");
      return PASS;
    };
    const r = await issueBundle({ ...paths, unlock }, { name: "beta", out: join(tmp(), "b2") });
    expect(r.name).toBe("beta");
    await revoke({ ...paths, unlock }, { target: "beta" });
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect((await readCaKey(paths.caKey, unlock)).startsWith("-----BEGIN PRIVATE KEY-----")).toBe(true);
  });

  it("protectCaKey encrypts an existing key in place; too short a passphrase is refused", async () => {
    const paths = homePaths(join(tmp(), "alpha"));
    await initPki(paths, { name: "alpha" });
    const plain = readFileSync(paths.caKey, "utf8");
    expect(() => protectCaKey(paths.caKey, "short")).toThrow(/at least 12 characters/);
    expect(readFileSync(paths.caKey, "utf8")).toBe(plain);
    protectCaKey(paths.caKey, PASS);
    expect(readFileSync(paths.caKey, "utf8")).toMatch(/ENCRYPTED PRIVATE KEY/);
    expect(mode(paths.caKey)).toBe(0o600);
    expect(await readCaKey(paths.caKey, async () => PASS)).toBe(plain);
    expect(() => protectCaKey(paths.caKey, PASS)).toThrow(/already encrypted/);
  });

  it.skipIf(spawnSync("openssl", ["version"]).status !== 0)(
    "is a standard encrypted PKCS#8 that OpenSSL opens with the passphrase",
    async () => {
      const paths = homePaths(join(tmp(), "alpha"));
      await initPki(paths, { name: "alpha", caPassphrase: PASS });
      const r = spawnSync("openssl", ["pkey", "-in", paths.caKey, "-passin", `pass:${PASS}`, "-noout"], {
        encoding: "utf8",
      });
      expect(r.status, r.stderr).toBe(0);
      expect(
        spawnSync("openssl", ["pkey", "-in", paths.caKey, "-passin", "pass:wrong passphrase", "-noout"]).status,
      ).not.toBe(0);
    },
  );
});
