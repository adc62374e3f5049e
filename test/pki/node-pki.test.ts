import { describe, expect, it } from "vitest";
import { chmodSync, copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureHome, homePaths } from "../../src/home";
import { PkiError, initPki, inspectCert, installBundle, issueBundle, loadNodeIdentity, readBundle } from "../../pki";
import { craftCert } from "../helpers/crafted-certs";
import { DAY_MS, listFiles, mode, tempDirs } from "./helpers";

const tmp = tempDirs();
const INIT_HINT = "run 'a2a-node init-pki --name NAME' (or --bundle FILE)";

async function rejection(p: Promise<unknown>): Promise<PkiError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  return err as PkiError;
}

describe("initPki", () => {
  it("creates the fleet CA and the node identity with private files and folders", async () => {
    const paths = homePaths(join(tmp(), "home")); // does not exist yet
    const r = await initPki(paths, {
      name: "Alice",
      sans: ["alice.lan", "10.0.0.5", "localhost", "ALICE"],
      hostname: "Build-Box",
    });

    expect(r.ca.created).toBe(true);
    expect(r.ca.subjectCn).toMatch(/^a2a-node fleet CA [0-9a-f]{8} \(alice\)$/);
    expect(r.ca.keyPath).toBe(paths.caKey);
    expect(r.node.name).toBe("alice");
    expect(r.node.sans).toEqual(["alice", "localhost", "127.0.0.1", "build-box", "alice.lan", "10.0.0.5"]);
    expect(r.node.fingerprint256).toBe(inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256);
    expect((r.node.notAfter.getTime() - Date.now()) / DAY_MS).toBeCloseTo(365, 1);
    expect((r.ca.notAfter.getTime() - Date.now()) / DAY_MS).toBeCloseTo(3650, 1);

    expect(mode(paths.caKey)).toBe(0o600);
    expect(mode(paths.nodeKey)).toBe(0o600);
    expect(mode(paths.caCert)).toBe(0o644);
    expect(mode(paths.nodeCert)).toBe(0o644);
    expect(mode(paths.caRegistry)).toBe(0o600);
    expect(mode(paths.secretsDir)).toBe(0o700);
    expect(mode(paths.certsDir)).toBe(0o700);
    expect(listFiles(paths.root)).toEqual([
      "certs/ca.crt",
      "certs/node.crt",
      "secrets/ca-registry.db",
      "secrets/ca.key",
      "secrets/node.key",
    ]);
  });

  it("skips a hostname that is not a valid DNS name", async () => {
    const r = await initPki(homePaths(tmp()), { name: "a", hostname: "my_laptop" });
    expect(r.node.sans).toEqual(["a", "localhost", "127.0.0.1"]);
  });

  it("refuses to overwrite an existing node key, leaving every file unchanged", async () => {
    const paths = homePaths(tmp());
    await initPki(paths, { name: "alice" });
    const before = Object.fromEntries(
      [paths.caKey, paths.caCert, paths.nodeKey, paths.nodeCert].map((p) => [p, readFileSync(p, "utf8")]),
    );
    const err = await rejection(initPki(paths, { name: "alice" }));
    expect(err.code).toBe("KEY_EXISTS");
    expect(err.message).toBe(`refusing to overwrite ${paths.nodeKey}: it already exists`);
    expect(err.hint).toBe(
      "use another --home, or remove the file yourself if you really mean to replace this node's identity",
    );
    for (const [p, content] of Object.entries(before)) expect(readFileSync(p, "utf8")).toBe(content);
    expect(listFiles(paths.root)).toEqual([
      "certs/ca.crt",
      "certs/node.crt",
      "secrets/ca-registry.db",
      "secrets/ca.key",
      "secrets/node.key",
    ]);
  });

  it("refuses a lone node certificate too (CERT_EXISTS)", async () => {
    const paths = ensureHome(homePaths(tmp()));
    writeFileSync(paths.nodeCert, "placeholder");
    expect((await rejection(initPki(paths, { name: "alice" }))).code).toBe("CERT_EXISTS");
    expect(readFileSync(paths.nodeCert, "utf8")).toBe("placeholder");
  });

  it("reuses the home's CA when only the node identity is missing", async () => {
    const paths = homePaths(tmp());
    const first = await initPki(paths, { name: "alice" });
    rmSync(paths.nodeKey);
    rmSync(paths.nodeCert);
    const second = await initPki(paths, { name: "alice2" });
    expect(second.ca.created).toBe(false);
    expect(second.ca.fingerprint256).toBe(first.ca.fingerprint256);
    expect(second.node.fingerprint256).not.toBe(first.node.fingerprint256);
  });

  it("refuses with NO_CA_KEY, pointing at --bundle, on a home holding only a CA certificate", async () => {
    const source = homePaths(tmp());
    await initPki(source, { name: "alice" });
    const paths = ensureHome(homePaths(tmp()));
    copyFileSync(source.caCert, paths.caCert);
    const err = await rejection(initPki(paths, { name: "bob" }));
    expect(err.code).toBe("NO_CA_KEY");
    expect(err.hint).toContain("--bundle FILE");
    expect(listFiles(paths.root)).toEqual(["certs/ca.crt"]);
  });

  it("checks names and SANs before writing anything", async () => {
    const paths = ensureHome(homePaths(tmp()));
    expect((await rejection(initPki(paths, { name: "bad_name" }))).code).toBe("BAD_NAME");
    expect((await rejection(initPki(paths, { name: "ok", sans: ["not a host"] }))).code).toBe("BAD_SAN");
    expect((await rejection(initPki(paths, { name: "ok", days: 0 }))).code).toBe("BAD_DAYS");
    expect((await rejection(initPki(paths, { name: "ok", days: 400, caDays: 30 }))).code).toBe("OUTLIVES_CA");
    expect(listFiles(paths.root)).toEqual([]);
  });
});

describe("bundles between two homes", () => {
  it("issues on the CA home and installs on another; the second home gets no CA key", async () => {
    const a = homePaths(tmp());
    const b = homePaths(tmp());
    const init = await initPki(a, { name: "alice" });
    const out = join(tmp(), "bob.bundle");
    const issued = await issueBundle(a, { name: "Bob", sans: ["bob.lan", "10.0.0.6"], out });
    expect(issued).toMatchObject({ name: "bob", out, sans: ["bob", "localhost", "127.0.0.1", "bob.lan", "10.0.0.6"] });
    expect(mode(out)).toBe(0o600);
    expect((await readBundle(out)).name).toBe("bob");

    const installed = await installBundle(b, out);
    expect(installed.ca).toMatchObject({ created: false, fingerprint256: init.ca.fingerprint256 });
    expect(installed.ca.keyPath).toBeUndefined();
    expect(installed.node).toMatchObject({ name: "bob", fingerprint256: issued.fingerprint256 });
    expect(existsSync(b.caKey)).toBe(false);
    expect(mode(b.nodeKey)).toBe(0o600);
    expect(listFiles(b.root)).toEqual(["certs/ca.crt", "certs/node.crt", "secrets/node.key"]);

    const id = await loadNodeIdentity(b);
    expect(id).toMatchObject({ name: "bob", hasCaKey: false, fingerprint256: issued.fingerprint256 });
    expect(id.ca.fingerprint256).toBe(init.ca.fingerprint256);
    expect((await loadNodeIdentity(a)).hasCaKey).toBe(true);

    // B can serve and dial, but cannot issue.
    const err = await rejection(issueBundle(b, { name: "carol", out: join(tmp(), "carol.bundle") }));
    expect(err.code).toBe("NO_CA_KEY");
    expect(err.hint).toBe("run this on the machine that ran 'a2a-node init-pki' first (it holds secrets/ca.key)");
  });

  it("refuses to install over an existing identity, or into a home of another fleet", async () => {
    const a = homePaths(tmp());
    await initPki(a, { name: "alice" });
    const out = join(tmp(), "bob.bundle");
    await issueBundle(a, { name: "bob", out });

    expect((await rejection(installBundle(a, out))).code).toBe("KEY_EXISTS");

    const other = homePaths(tmp());
    await initPki(other, { name: "zed" });
    rmSync(other.nodeKey);
    rmSync(other.nodeCert);
    const caBefore = readFileSync(other.caCert, "utf8");
    const err = await rejection(installBundle(other, out));
    expect(err.code).toBe("CA_MISMATCH");
    expect(readFileSync(other.caCert, "utf8")).toBe(caBefore);
    expect(existsSync(other.nodeKey)).toBe(false);
  });

  it("does not overwrite an existing bundle file unless asked", async () => {
    const a = homePaths(tmp());
    await initPki(a, { name: "alice" });
    const out = join(tmp(), "bob.bundle");
    writeFileSync(out, "precious");
    expect((await rejection(issueBundle(a, { name: "bob", out }))).code).toBe("FILE_EXISTS");
    expect(readFileSync(out, "utf8")).toBe("precious");
    await issueBundle(a, { name: "bob", out, overwrite: true });
    expect((await readBundle(out)).name).toBe("bob");
  });

  it("gives NO_CA_KEY with the hint on an empty home", async () => {
    const err = await rejection(issueBundle(homePaths(tmp()), { name: "bob", out: join(tmp(), "b.bundle") }));
    expect(err).toMatchObject({
      code: "NO_CA_KEY",
      hint: "run this on the machine that ran 'a2a-node init-pki' first (it holds secrets/ca.key)",
    });
  });
});

describe("loadNodeIdentity", () => {
  it("returns PEMs ready for node:tls, and the identity's facts", async () => {
    const paths = homePaths(tmp());
    const init = await initPki(paths, { name: "alice" });
    const id = await loadNodeIdentity(paths);
    expect(id.certPem).toBe(readFileSync(paths.nodeCert, "utf8"));
    expect(id.caPem).toBe(readFileSync(paths.caCert, "utf8"));
    expect(id.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(id).toMatchObject({
      name: "alice",
      fingerprint256: init.node.fingerprint256,
      notAfter: init.node.notAfter,
      hasCaKey: true,
    });
  });

  it("tells a home without an identity how to get one", async () => {
    const err = await rejection(loadNodeIdentity(homePaths(tmp())));
    expect(err).toMatchObject({ code: "NO_NODE_CERT", hint: INIT_HINT });
  });

  it("refuses a key that others can read", async () => {
    const paths = homePaths(tmp());
    await initPki(paths, { name: "alice" });
    chmodSync(paths.nodeKey, 0o644);
    const err = await rejection(loadNodeIdentity(paths));
    expect(err).toMatchObject({ code: "INSECURE_PERMISSIONS", hint: `chmod 600 ${paths.nodeKey}` });
  });

  it("refuses a key that belongs to another certificate", async () => {
    const paths = homePaths(tmp());
    await initPki(paths, { name: "alice" });
    chmodSync(paths.nodeKey, 0o600);
    writeFileSync(paths.nodeKey, readFileSync(paths.caKey));
    expect((await rejection(loadNodeIdentity(paths))).code).toBe("KEY_MISMATCH");
  });

  it("refuses a certificate named 'local' (made before the name was reserved), but can still describe it", async () => {
    const paths = homePaths(tmp());
    await initPki(paths, { name: "alice" });
    const old = await craftCert(
      { certPem: readFileSync(paths.caCert, "utf8"), keyPem: readFileSync(paths.caKey, "utf8") },
      { subject: [{ CN: ["local"] }] },
    );
    writeFileSync(paths.nodeCert, old.certPem);
    writeFileSync(paths.nodeKey, old.keyPem, { mode: 0o600 });
    const err = await rejection(loadNodeIdentity(paths));
    expect(err.code).toBe("RESERVED_NAME");
    expect(err.message).toMatch(/^the name "local" is reserved/);
    expect((await loadNodeIdentity(paths, { allowExpired: true })).name).toBe("local");
  });

  it("refuses an expired certificate, but can still describe it", async () => {
    const paths = homePaths(tmp());
    await initPki(paths, { name: "alice", days: 1, now: new Date(Date.now() - 3 * DAY_MS) });
    const err = await rejection(loadNodeIdentity(paths));
    expect(err.code).toBe("EXPIRED");
    expect(err.message).toContain(paths.nodeCert);
    const id = await loadNodeIdentity(paths, { allowExpired: true });
    expect(id.notAfter.getTime()).toBeLessThan(Date.now());
  });
});
