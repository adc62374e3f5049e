import { describe, expect, it } from "vitest";
import { X509Certificate as NodeX509, createPrivateKey } from "node:crypto";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import {
  createCa,
  defaultCaName,
  exportPublicKeyPem,
  generateKeyPair,
  inspectCert,
  issueLeaf,
  signPublicKey,
} from "../../pki";
import { craftIntermediateLeaf } from "../helpers/crafted-certs";
import { DAY_MS, tempDirs } from "./helpers";

const tmp = tempDirs();

describe("createCa", () => {
  it("makes a self-signed P-256 CA limited to signing leaves", async () => {
    const before = Date.now();
    const ca = await createCa({ name: "a2a-node fleet CA test", days: 100 });
    const cert = new x509.X509Certificate(ca.certPem);
    expect(cert.subject).toBe("CN=a2a-node fleet CA test");
    expect(cert.issuer).toBe(cert.subject);
    expect(await cert.isSelfSigned()).toBe(true);

    const basic = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([basic.ca, basic.pathLength, basic.critical]).toEqual([true, 0, true]);
    const usage = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(usage.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    expect(usage.critical).toBe(true);
    expect(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/^[0-9a-f]{40}$/);

    // Serial: 16 random bytes, positive, no leading zero byte.
    expect(cert.serialNumber).toMatch(/^[4-7][0-9a-f]{31}$/);
    const validDays = (cert.notAfter.getTime() - before) / DAY_MS;
    expect(validDays).toBeGreaterThan(99.99);
    expect(validDays).toBeLessThan(100.01);
    expect(cert.notBefore.getTime()).toBeLessThanOrEqual(before);

    const node = new NodeX509(ca.certPem);
    expect(node.ca).toBe(true);
    expect(node.subject).toBe("CN=a2a-node fleet CA test");
    expect(node.checkIssued(node)).toBe(true);
    expect(node.verify(node.publicKey)).toBe(true);
    expect(node.checkPrivateKey(createPrivateKey(ca.keyPem))).toBe(true);
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
  });

  it("gives each fleet CA a distinct subject and refuses names that would need escaping", async () => {
    expect(defaultCaName("alice")).toMatch(/^a2a-node fleet CA [0-9a-f]{8} \(alice\)$/);
    expect(defaultCaName("alice")).not.toBe(defaultCaName("alice"));
    expect(defaultCaName("x".repeat(63)).length).toBeLessThanOrEqual(64);
    await expect(createCa({ name: 'evil, CN="x"' })).rejects.toMatchObject({ code: "BAD_NAME" });
    await expect(createCa({ name: "ok", days: 0 })).rejects.toMatchObject({ code: "BAD_DAYS" });
  });
});

describe("issueLeaf", () => {
  it("makes a node certificate for both ends of mutual TLS", async () => {
    const ca = await createCa({ name: "test CA" });
    const before = Date.now();
    const leaf = await issueLeaf({
      ca,
      name: "Alice",
      sans: ["alice.lan", "10.0.0.5", "fd00::0005", "*.svc.lan", "alice"],
      days: 30,
    });
    const cert = new x509.X509Certificate(leaf.certPem);
    const caCert = new x509.X509Certificate(ca.certPem);

    expect(cert.subject).toBe("CN=alice");
    expect(cert.issuer).toBe(caCert.subject);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension)!;
    expect(san.names.items.map((n) => `${n.type}:${n.value}`)).toEqual([
      "dns:alice",
      "dns:alice.lan",
      "ip:10.0.0.5",
      "ip:fd00::5",
      "dns:*.svc.lan",
    ]);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([
      x509.ExtendedKeyUsage.serverAuth,
      x509.ExtendedKeyUsage.clientAuth,
    ]);
    const usage = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(usage.usages & x509.KeyUsageFlags.digitalSignature).toBeTruthy();
    expect(usage.usages & x509.KeyUsageFlags.keyCertSign).toBe(0);
    const basic = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([basic.ca, basic.critical]).toEqual([false, true]);
    expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(
      caCert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId,
    );
    expect(await cert.verify({ publicKey: caCert.publicKey, signatureOnly: true })).toBe(true);
    expect((cert.notAfter.getTime() - before) / DAY_MS).toBeCloseTo(30, 2);

    // The same facts as node:crypto (OpenSSL underneath) reads them.
    const node = new NodeX509(leaf.certPem);
    const nodeCa = new NodeX509(ca.certPem);
    expect(node.subject).toBe("CN=alice");
    expect(node.ca).toBe(false);
    expect(node.subjectAltName).toContain("DNS:alice.lan");
    expect(node.subjectAltName).toContain("IP Address:10.0.0.5");
    expect(node.subjectAltName).toMatch(/IP Address:FD00:0:0:0:0:0:0:5|IP Address:fd00::5/i);
    expect(node.checkIssued(nodeCa)).toBe(true);
    expect(node.verify(nodeCa.publicKey)).toBe(true);
    expect(node.checkPrivateKey(createPrivateKey(leaf.keyPem))).toBe(true);
    expect(node.checkHost("alice.lan")).toBe("alice.lan");
    expect(node.checkIP("10.0.0.5")).toBe("10.0.0.5");
    expect(node.toLegacyObject().ext_key_usage).toEqual(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
    expect(inspectCert(leaf.certPem).fingerprint256).toBe(node.fingerprint256);
    expect(inspectCert(leaf.certPem).serialNumber).toBe(node.serialNumber);
  });

  it("signs a public key made elsewhere, so the private key never travels", async () => {
    const ca = await createCa({ name: "test CA" });
    const keys = await generateKeyPair();
    const certPem = await signPublicKey({
      ca,
      name: "carol",
      sans: [],
      publicKey: await exportPublicKeyPem(keys.publicKey),
    });
    const cert = new x509.X509Certificate(certPem);
    const spki = Buffer.from(await crypto.subtle.exportKey("spki", keys.publicKey));
    expect(Buffer.from(cert.publicKey.rawData).equals(spki)).toBe(true);
    expect(inspectCert(certPem).subjectCn).toBe("carol");
    await expect(signPublicKey({ ca, name: "carol", sans: [], publicKey: "not a key" })).rejects.toMatchObject({
      code: "BAD_KEY",
    });
  });

  it("refuses a leaf that would outlive its CA, an expired CA, a non-CA signer and a mismatched CA key", async () => {
    const shortCa = await createCa({ name: "short CA", days: 10 });
    await expect(issueLeaf({ ca: shortCa, name: "a", sans: [], days: 365 })).rejects.toMatchObject({
      code: "OUTLIVES_CA",
      hint: "pass --days 9 or less",
    });
    const oldCa = await createCa({ name: "old CA", days: 1, now: new Date(Date.now() - 10 * DAY_MS) });
    await expect(issueLeaf({ ca: oldCa, name: "a", sans: [], days: 1 })).rejects.toMatchObject({ code: "EXPIRED" });
    const leaf = await issueLeaf({ ca: shortCa, name: "a", sans: [], days: 1 });
    await expect(issueLeaf({ ca: leaf, name: "b", sans: [], days: 1 })).rejects.toMatchObject({ code: "NOT_A_CA" });
    const otherCa = await createCa({ name: "other CA" });
    await expect(
      issueLeaf({ ca: { certPem: shortCa.certPem, keyPem: otherCa.keyPem }, name: "b", sans: [], days: 1 }),
    ).rejects.toMatchObject({
      code: "KEY_MISMATCH",
    });
  });

  const openssl = spawnSync("openssl", ["version"]).status === 0;
  it.skipIf(!openssl)("passes OpenSSL's own chain and purpose checks", async () => {
    const dir = tmp();
    const ca = await createCa({ name: "test CA" });
    const leaf = await issueLeaf({ ca, name: "alice", sans: ["127.0.0.1"] });
    writeFileSync(join(dir, "ca.crt"), ca.certPem);
    writeFileSync(join(dir, "leaf.crt"), leaf.certPem);
    for (const purpose of ["sslserver", "sslclient"]) {
      const r = spawnSync(
        "openssl",
        ["verify", "-x509_strict", "-purpose", purpose, "-CAfile", join(dir, "ca.crt"), join(dir, "leaf.crt")],
        { encoding: "utf8" },
      );
      expect(r.stdout.trim()).toBe(`${join(dir, "leaf.crt")}: OK`);
    }
  });

  it.skipIf(!openssl)(
    "makes a CA whose path length OpenSSL enforces: a leaf under an intermediate it signed does not verify",
    async () => {
      const dir = tmp();
      const ca = await createCa({ name: "test CA" });
      const { intermediate, leaf } = await craftIntermediateLeaf(ca, "sneaky");
      writeFileSync(join(dir, "ca.crt"), ca.certPem);
      writeFileSync(join(dir, "sub.crt"), intermediate.certPem);
      writeFileSync(join(dir, "leaf.crt"), leaf.certPem);
      const r = spawnSync(
        "openssl",
        [
          "verify",
          "-purpose",
          "sslclient",
          "-CAfile",
          join(dir, "ca.crt"),
          "-untrusted",
          join(dir, "sub.crt"),
          join(dir, "leaf.crt"),
        ],
        { encoding: "utf8" },
      );
      expect(r.status).not.toBe(0);
      expect(r.stdout + r.stderr).toMatch(/path length constraint exceeded/);
    },
  );
});
