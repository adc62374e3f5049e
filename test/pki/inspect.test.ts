import { beforeAll, describe, expect, it } from "vitest";
import { X509Certificate as NodeX509 } from "node:crypto";
import { createCa, inspectCert, issueLeaf, verifyIssuedBy } from "../../pki";
import { DAY_MS, makeFleet } from "./helpers";

let fleet: Awaited<ReturnType<typeof makeFleet>>;
beforeAll(async () => {
  fleet = await makeFleet();
});

describe("inspectCert", () => {
  it("reports what node:crypto reports, in node's formats", () => {
    const info = inspectCert(fleet.alice.certPem);
    const node = new NodeX509(fleet.alice.certPem);
    expect(info.subjectCn).toBe("alice");
    expect(info.issuerCn).toBe("test fleet CA");
    expect(info.sans).toEqual(["alice", "localhost", "127.0.0.1"]);
    expect(info.fingerprint256).toBe(node.fingerprint256);
    expect(info.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(info.serialNumber).toBe(node.serialNumber);
    expect(info.notAfter.getTime()).toBe(new Date(node.validTo).getTime());
    expect(info.notBefore.getTime()).toBe(new Date(node.validFrom).getTime());
    expect(info.isCa).toBe(false);
    expect(inspectCert(fleet.ca.certPem).isCa).toBe(true);
  });

  it("refuses anything but exactly one PEM certificate with BAD_PEM", () => {
    for (const bad of [
      "",
      "hello",
      fleet.alice.keyPem,
      fleet.alice.certPem + fleet.bob.certPem,
      fleet.alice.certPem.replace(/[A-Z]{8}/, "AAAAAAAA"),
    ]) {
      expect(() => inspectCert(bad, "certs/node.crt")).toThrow(
        expect.objectContaining({ code: "BAD_PEM", message: "certs/node.crt is not a valid PEM certificate" }),
      );
    }
  });
});

describe("verifyIssuedBy", () => {
  it("accepts a leaf from its CA", async () => {
    await expect(verifyIssuedBy(fleet.alice.certPem, fleet.ca.certPem)).resolves.toBeUndefined();
  });

  it("refuses a leaf from another CA with NOT_ISSUED_BY_CA", async () => {
    await expect(
      verifyIssuedBy(fleet.mallory.certPem, fleet.ca.certPem, { what: "bob's certificate" }),
    ).rejects.toMatchObject({
      code: "NOT_ISSUED_BY_CA",
      message: expect.stringMatching(
        /^bob's certificate was not issued by the fleet CA: its issuer is "CN=foreign CA"/,
      ),
    });
  });

  it("refuses a forged leaf that copies the CA's name but not its key", async () => {
    const impostorCa = await createCa({ name: "test fleet CA" });
    const forged = await issueLeaf({ ca: impostorCa, name: "bob", sans: [] });
    await expect(verifyIssuedBy(forged.certPem, fleet.ca.certPem)).rejects.toMatchObject({
      code: "NOT_ISSUED_BY_CA",
      message: expect.stringContaining("signature does not verify"),
    });
  });

  it("refuses an expired leaf with EXPIRED, and a future one with NOT_YET_VALID", async () => {
    const longAgo = new Date(Date.now() - 10 * DAY_MS);
    const ca = await createCa({ name: "test fleet CA", now: longAgo });
    const old = await issueLeaf({ ca, name: "old", sans: [], days: 1, now: longAgo });
    await expect(verifyIssuedBy(old.certPem, ca.certPem)).rejects.toMatchObject({
      code: "EXPIRED",
      hint: expect.stringContaining("pki issue"),
    });
    await expect(verifyIssuedBy(old.certPem, ca.certPem, { ignoreValidity: true })).resolves.toBeUndefined();
    await expect(
      verifyIssuedBy(fleet.alice.certPem, fleet.ca.certPem, { now: new Date(Date.now() - DAY_MS) }),
    ).rejects.toMatchObject({
      code: "NOT_YET_VALID",
      hint: "check this machine's clock",
    });
  });

  it("refuses a 'CA' that is a leaf", async () => {
    await expect(verifyIssuedBy(fleet.bob.certPem, fleet.alice.certPem)).rejects.toMatchObject({ code: "NOT_A_CA" });
  });
});
