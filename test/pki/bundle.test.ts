import { beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUNDLE_FORMAT, type Bundle, createCa, issueLeaf, readBundle, writeBundle } from "../../pki";
import { DAY_MS, makeFleet, mode, tempDirs } from "./helpers";

const tmp = tempDirs();
let fleet: Awaited<ReturnType<typeof makeFleet>>;
let good: Bundle;
beforeAll(async () => {
  fleet = await makeFleet();
  good = {
    format: BUNDLE_FORMAT,
    name: "bob",
    caCert: fleet.ca.certPem,
    cert: fleet.bob.certPem,
    key: fleet.bob.keyPem,
  };
});

function fileWith(content: string): string {
  const path = join(tmp(), "bob.bundle");
  writeFileSync(path, content);
  return path;
}

describe("bundles", () => {
  it("round-trips through writeBundle and readBundle, written 0600", async () => {
    const path = join(tmp(), "bob.bundle");
    writeBundle(path, good);
    expect(mode(path)).toBe(0o600);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(good);
    expect(await readBundle(path)).toEqual(good);
  });

  it("refuses to overwrite an existing bundle unless asked", () => {
    const path = fileWith("keep me");
    expect(() => writeBundle(path, good)).toThrow(expect.objectContaining({ code: "FILE_EXISTS" }));
    expect(readFileSync(path, "utf8")).toBe("keep me");
    writeBundle(path, good, { overwrite: true });
    expect(JSON.parse(readFileSync(path, "utf8")).name).toBe("bob");
  });

  const cases: Array<[string, () => string | Promise<string>, RegExp]> = [
    ["not JSON", () => "{ this is not json", /: not JSON$/],
    ["a JSON array", () => "[]", /: not a JSON object$/],
    [
      "the wrong format",
      () => JSON.stringify({ ...good, format: "pem-bundle/2" }),
      /format is "pem-bundle\/2", expected "a2a-node-bundle\/1"$/,
    ],
    ["no format", () => JSON.stringify({ ...good, format: undefined }), /format is null/],
    ["a missing key", () => JSON.stringify({ ...good, key: undefined }), /field "key" is missing or not a string$/],
    [
      "a cert that is not PEM",
      () => JSON.stringify({ ...good, cert: "garbage" }),
      /"cert" is not a valid PEM certificate$/,
    ],
    [
      "a leaf as caCert",
      () => JSON.stringify({ ...good, caCert: fleet.alice.certPem }),
      /"caCert" is not a CA certificate$/,
    ],
    [
      "a cert from another CA",
      () => JSON.stringify({ ...good, cert: fleet.mallory.certPem, key: fleet.mallory.keyPem }),
      /"cert" was not issued by the fleet CA/,
    ],
    [
      "a key that does not match the cert",
      () => JSON.stringify({ ...good, key: fleet.alice.keyPem }),
      /"key" does not belong to "cert"$/,
    ],
    [
      "a key that is not a key",
      () => JSON.stringify({ ...good, key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" }),
      /"key" is not a PKCS#8/,
    ],
    [
      "a name that is not the cert's",
      () => JSON.stringify({ ...good, name: "alice" }),
      /"name" is "alice" but the certificate is for "bob"$/,
    ],
    [
      "an expired cert",
      async () => {
        const longAgo = new Date(Date.now() - 10 * DAY_MS);
        const ca = await createCa({ name: "old CA", now: longAgo });
        const old = await issueLeaf({ ca, name: "bob", sans: [], days: 1, now: longAgo });
        return JSON.stringify({ ...good, caCert: ca.certPem, cert: old.certPem, key: old.keyPem });
      },
      /"cert" expired on /,
    ],
  ];

  it.each(cases)("refuses %s with BAD_BUNDLE and the reason", async (_label, content, reason) => {
    const path = fileWith(await content());
    const err = await readBundle(path).catch((e) => e);
    expect(err).toMatchObject({ code: "BAD_BUNDLE", hint: expect.stringContaining("pki issue") });
    expect(err.message.startsWith(`bad bundle ${path}: `)).toBe(true);
    expect(err.message).toMatch(reason);
  });

  it("never quotes the file's content in an error, since it may hold a key", async () => {
    const secret = fleet.bob.keyPem.split("\n")[1];
    const path = fileWith(`not json ${fleet.bob.keyPem}`);
    const err = await readBundle(path).catch((e) => e);
    expect(err.code).toBe("BAD_BUNDLE");
    expect(err.message).not.toContain(secret);
    expect(err.message).not.toContain("PRIVATE KEY");
  });

  it("reports a missing file as READ_FAILED", async () => {
    await expect(readBundle(join(tmp(), "nope.bundle"))).rejects.toMatchObject({ code: "READ_FAILED" });
  });
});
