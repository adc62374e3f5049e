/**
 * The air-gapped flow: a key made on the new machine, a PKCS#10 request to the CA, a certificate back. Real
 * requests from our code and from @peculiar/x509 directly (what another tool could send), real CA homes.
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import {
  createCsr,
  importCertificate,
  initPki,
  inspectCert,
  loadNodeIdentity,
  openCaRegistry,
  PkiError,
  readCsr,
  requestCertificate,
  signCsr,
} from "../../pki";
import { EC_ALGORITHM, x509 } from "../../pki/x509";
import { generateKeyPair } from "../../pki/keys";
import { listFiles, mode, tempDirs } from "./helpers";

const tmp = tempDirs();

async function rejection(p: Promise<unknown>): Promise<PkiError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  return err as PkiError;
}

/** A request made with the library directly, as a foreign tool would. */
async function rawCsr(
  name: x509.JsonName | string,
  opts: { keys?: CryptoKeyPair; alg?: { name: string; [k: string]: unknown }; sans?: x509.JsonGeneralNames } = {},
) {
  const keys = opts.keys ?? (await generateKeyPair());
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys,
    signingAlgorithm: opts.alg ?? EC_ALGORITHM,
    extensions: opts.sans ? [new x509.SubjectAlternativeNameExtension(opts.sans)] : [],
  });
  return csr.toString("pem");
}

describe("readCsr", () => {
  it("reads our own request: name, SANs, public key", async () => {
    const { csrPem, keyPem } = await createCsr({ name: "Carol", sans: ["carol.lan", "10.0.0.8", "carol"] });
    expect(csrPem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----\n/);
    expect(csrPem).not.toContain("PRIVATE KEY");
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const info = await readCsr(csrPem);
    expect(info.name).toBe("carol");
    expect(info.sans).toEqual(["carol.lan", "10.0.0.8"]);
    expect(info.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
  });

  it.each([
    ["garbage", async () => "hello", /not one PEM certificate request/],
    [
      "a certificate instead",
      async () => (await createCsr({ name: "a", sans: [] })).csrPem.replace(/CERTIFICATE REQUEST/g, "CERTIFICATE"),
      /not one PEM certificate request/,
    ],
    [
      "two requests",
      async () => (await createCsr({ name: "a", sans: [] })).csrPem.repeat(2),
      /not one PEM certificate request/,
    ],
    [
      "an RSA key",
      async () => {
        const alg = {
          name: "RSASSA-PKCS1-v1_5",
          hash: "SHA-256",
          publicExponent: new Uint8Array([1, 0, 1]),
          modulusLength: 2048,
        };
        const keys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
        return rawCsr("CN=carol", { keys, alg });
      },
      /its key is RSASSA-PKCS1-v1_5, not ECDSA P-256/,
    ],
    [
      "a P-384 key",
      async () => {
        const alg = { name: "ECDSA", namedCurve: "P-384", hash: "SHA-384" };
        const keys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
        return rawCsr("CN=carol", { keys, alg });
      },
      /its key is ECDSA P-384, not ECDSA P-256/,
    ],
    ["a subject with an O", async () => rawCsr([{ CN: ["carol"] }, { O: ["evil"] }]), /its subject must be one CN/],
    ["two CNs", async () => rawCsr([{ CN: ["carol", "alpha"] }]), /its subject must be one CN/],
    ["no CN", async () => rawCsr([{ O: ["carol"] }]), /its subject must be one CN/],
    [
      "an email SAN",
      async () => rawCsr("CN=carol", { sans: [{ type: "email", value: "a@b.c" }] }),
      /it asks for email SANs; only DNS names and IP addresses are issued/,
    ],
  ])("refuses %s with BAD_CSR", async (_what, make, reason) => {
    const err = await rejection(readCsr(await make(), "carol.csr"));
    expect(err.code).toBe("BAD_CSR");
    expect(err.message).toMatch(/^carol\.csr cannot be signed: /);
    expect(err.message).toMatch(reason);
    expect(err.hint).toBe("make a new one on that machine: a2a-node init-pki --name NAME --csr FILE");
  });

  it("refuses a request whose signature was tampered with", async () => {
    const { csrPem } = await createCsr({ name: "carol", sans: [] });
    const der = Buffer.from(x509.PemConverter.decodeFirst(csrPem));
    der[der.length - 5] ^= 0x01; // inside the signature
    const tampered = x509.PemConverter.encode(der, "CERTIFICATE REQUEST");
    const err = await rejection(readCsr(tampered));
    expect(err.code).toBe("BAD_CSR");
    expect(err.message).toMatch(/its signature does not verify with the key it carries$/);
  });

  it("refuses a request for another subject copied onto our key's signature", async () => {
    // Swap the CN inside a signed request: the signature no longer covers what it says.
    const { csrPem } = await createCsr({ name: "carol", sans: [] });
    const der = Buffer.from(x509.PemConverter.decodeFirst(csrPem));
    const at = der.indexOf(Buffer.from("carol"));
    Buffer.from("karol").copy(der, at);
    const err = await rejection(readCsr(x509.PemConverter.encode(der, "CERTIFICATE REQUEST")));
    expect(err.message).toMatch(/its signature does not verify/);
  });

  it.each([
    ["local", "RESERVED_NAME"],
    ["localhost", "RESERVED_NAME"],
    ["not_a_name", "BAD_NAME"],
  ])("refuses the name %j with %s", async (cn, code) => {
    expect((await rejection(readCsr(await rawCsr(`CN=${cn}`)))).code).toBe(code);
  });
});

describe("init-pki --csr, pki sign, pki import", () => {
  async function caHome() {
    const paths = homePaths(join(tmp(), "alpha"));
    await initPki(paths, { name: "alpha" });
    return paths;
  }

  it("goes end to end: the key never leaves, the certificate is recorded and installed", async () => {
    const ca = await caHome();
    const carol = homePaths(join(tmp(), "carol"));
    const csrPath = join(tmp(), "carol.csr");
    const req = await requestCertificate(carol, {
      name: "carol",
      sans: ["10.0.0.8"],
      csrOut: csrPath,
      hostname: "carol-box",
    });
    expect(req).toMatchObject({
      name: "carol",
      sans: ["carol", "localhost", "127.0.0.1", "carol-box", "10.0.0.8"],
      keyCreated: true,
    });
    expect(mode(carol.nodeKey)).toBe(0o600);
    expect(mode(carol.secretsDir)).toBe(0o700);
    expect(mode(csrPath)).toBe(0o644);
    expect(listFiles(carol.root)).toEqual(["secrets/node.key"]);
    const key = readFileSync(carol.nodeKey, "utf8");

    const certPath = join(tmp(), "carol.crt");
    const signed = await signCsr(ca, { csrPath, out: certPath, sans: ["carol.lan"], days: 30 });
    expect(signed.sans).toEqual(["carol", "localhost", "127.0.0.1", "carol-box", "10.0.0.8", "carol.lan"]);
    expect(readFileSync(certPath, "utf8")).not.toContain("PRIVATE KEY");
    const reg = openCaRegistry(ca);
    expect(reg.bySerial(signed.serial)).toMatchObject({
      name: "carol",
      how: "csr",
      fingerprint256: signed.fingerprint256,
    });
    reg.close();

    const r = await importCertificate(carol, { certPath, caPath: ca.caCert });
    expect(r.node).toMatchObject({ name: "carol", fingerprint256: signed.fingerprint256 });
    expect(readFileSync(carol.nodeKey, "utf8")).toBe(key);
    expect(readFileSync(carol.caCert, "utf8")).toBe(readFileSync(ca.caCert, "utf8"));
    expect(mode(carol.nodeCert)).toBe(0o644);
    const id = await loadNodeIdentity(carol);
    expect(id.name).toBe("carol");
    expect(id.hasCaKey).toBe(false);
  });

  it("run again before the certificate came back, it reuses the key; never overwrites the request unasked", async () => {
    const carol = homePaths(join(tmp(), "carol"));
    const csrPath = join(tmp(), "carol.csr");
    await requestCertificate(carol, { name: "carol", csrOut: csrPath });
    const key = readFileSync(carol.nodeKey, "utf8");
    expect((await rejection(requestCertificate(carol, { name: "carol", csrOut: csrPath }))).code).toBe("FILE_EXISTS");
    const again = await requestCertificate(carol, { name: "carol", csrOut: csrPath, overwrite: true });
    expect(again.keyCreated).toBe(false);
    expect(readFileSync(carol.nodeKey, "utf8")).toBe(key);
    const first = await readCsr(readFileSync(csrPath, "utf8"));
    expect(first.publicKeyPem).toBe(
      (await readCsr((await createCsr({ name: "carol", sans: [], keyPem: key })).csrPem)).publicKeyPem,
    );
  });

  it("refuses a request in a home that already has its certificate", async () => {
    const ca = await caHome();
    expect((await rejection(requestCertificate(ca, { name: "alpha", csrOut: join(tmp(), "x.csr") }))).code).toBe(
      "CERT_EXISTS",
    );
  });

  it("sign follows the one-valid-certificate rule, and --replace revokes", async () => {
    const ca = await caHome();
    const csrPath = join(tmp(), "c.csr");
    await requestCertificate(homePaths(join(tmp(), "c")), { name: "carol", csrOut: csrPath });
    const first = await signCsr(ca, { csrPath, out: join(tmp(), "1.crt") });
    const out = join(tmp(), "2.crt");
    expect((await rejection(signCsr(ca, { csrPath, out }))).code).toBe("NAME_HAS_CERT");
    expect(existsSync(out)).toBe(false);
    const second = await signCsr(ca, { csrPath, out, replace: true });
    expect(second.revoked.map((c) => c.serial)).toEqual([first.serial]);
    expect((await rejection(signCsr(ca, { csrPath, out, replace: true }))).code).toBe("FILE_EXISTS");
  });

  it("sign refuses a request naming the CA node itself, or a reserved name, and writes nothing", async () => {
    const ca = await caHome();
    const reserved = join(tmp(), "local.csr");
    writeFileSync(reserved, await rawCsr("CN=local"));
    const out = join(tmp(), "local.crt");
    expect((await rejection(signCsr(ca, { csrPath: reserved, out }))).code).toBe("RESERVED_NAME");
    const alpha = join(tmp(), "alpha.csr");
    writeFileSync(alpha, (await createCsr({ name: "alpha", sans: [] })).csrPem);
    expect((await rejection(signCsr(ca, { csrPath: alpha, out }))).code).toBe("NAME_HAS_CERT");
    expect(existsSync(out)).toBe(false);
  });

  it("sign needs the CA key", async () => {
    const csrPath = join(tmp(), "c.csr");
    await requestCertificate(homePaths(join(tmp(), "c")), { name: "carol", csrOut: csrPath });
    const notCa = homePaths(join(tmp(), "empty"));
    expect((await rejection(signCsr(notCa, { csrPath, out: join(tmp(), "c.crt") }))).code).toBe("NO_CA_KEY");
  });

  describe("import refuses", () => {
    async function pending() {
      const ca = await caHome();
      const carol = homePaths(join(tmp(), "carol"));
      const csrPath = join(tmp(), "carol.csr");
      await requestCertificate(carol, { name: "carol", csrOut: csrPath });
      const certPath = join(tmp(), "carol.crt");
      await signCsr(ca, { csrPath, out: certPath });
      return { ca, carol, certPath };
    }

    it("a certificate from another CA than --ca (NOT_ISSUED_BY_CA), installing nothing", async () => {
      const { carol, certPath } = await pending();
      const other = await caHome();
      const err = await rejection(importCertificate(carol, { certPath, caPath: other.caCert }));
      expect(err.code).toBe("NOT_ISSUED_BY_CA");
      expect(listFiles(carol.root)).toEqual(["secrets/node.key"]);
    });

    it("a --ca that is not a CA", async () => {
      const { carol, certPath } = await pending();
      expect((await rejection(importCertificate(carol, { certPath, caPath: certPath }))).code).toBe("NOT_A_CA");
    });

    it("a certificate for another key (KEY_MISMATCH)", async () => {
      const { ca, certPath } = await pending();
      const dave = homePaths(join(tmp(), "dave"));
      await requestCertificate(dave, { name: "carol", csrOut: join(tmp(), "d.csr") });
      const err = await rejection(importCertificate(dave, { certPath, caPath: ca.caCert }));
      expect(err.code).toBe("KEY_MISMATCH");
      expect(existsSync(dave.nodeCert)).toBe(false);
    });

    it("a home with no pending key, or one that already has a certificate", async () => {
      const { ca, carol, certPath } = await pending();
      const empty = homePaths(join(tmp(), "empty"));
      const err = await rejection(importCertificate(empty, { certPath, caPath: ca.caCert }));
      expect(err.code).toBe("NO_PENDING_KEY");
      expect(err.hint).toMatch(/the key never leaves that machine/);
      await importCertificate(carol, { certPath, caPath: ca.caCert });
      expect((await rejection(importCertificate(carol, { certPath, caPath: ca.caCert }))).code).toBe("CERT_EXISTS");
    });

    it("an expired certificate", async () => {
      const { ca, carol, certPath } = await pending();
      const later = new Date(inspectCert(readFileSync(certPath, "utf8")).notAfter.getTime() + 1000);
      expect((await rejection(importCertificate(carol, { certPath, caPath: ca.caCert, now: later }))).code).toBe(
        "EXPIRED",
      );
    });
  });
});
