/**
 * The fleet PKI's lifecycle through the compiled binary: what the CA records, expiry warnings in serve's log,
 * needs-renewal's exit codes for timers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCa, installBundle, initPki, issueBundle, issueLeaf } from "../../pki";
import { ensureHome, homePaths } from "../../src/home";
import { runBinary, serveBinary } from "../helpers/binary";

const DAY = 86_400_000;
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "a2a-pki-e2e-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the CA keeps records (binary)", () => {
  it("issue twice is refused, --replace revokes, list shows it", async () => {
    const ca = join(root, "ca");
    expect((await runBinary(["--home", ca, "init-pki", "--name", "ca"])).code).toBe(0);
    expect((await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b1")])).code).toBe(0);
    const again = await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b2")]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^a2a-node: "beta" already has a valid certificate \(serial [0-9A-F]+, expires .*\)\n  next: pass --replace/);
    expect((await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b2"), "--replace"])).code).toBe(0);
    const list = JSON.parse((await runBinary(["--home", ca, "pki", "list", "--json"])).stdout);
    expect(list.map((c: { name: string; status: string }) => `${c.name}:${c.status}`)).toEqual(["ca:valid", "beta:revoked", "beta:valid"]);
  });
});

describe("the CSR flow (binary): no private key travels", () => {
  it("init-pki --csr, pki sign, pki import, then carol serves and alpha delegates to her", async () => {
    const alpha = join(root, "csr-alpha");
    const carol = join(root, "csr-carol");
    const csr = join(root, "carol.csr");
    const crt = join(root, "carol.crt");
    expect((await runBinary(["--home", alpha, "init-pki", "--name", "alpha"])).code).toBe(0);
    const req = await runBinary(["--home", carol, "init-pki", "--name", "carol", "--csr", csr]);
    expect(req.code, req.stderr).toBe(0);
    const signed = await runBinary(["--home", alpha, "pki", "sign", csr, "--out", crt]);
    expect(signed.code, signed.stderr).toBe(0);
    const imported = await runBinary(["--home", carol, "pki", "import", crt, "--ca", homePaths(alpha).caCert]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(statSync(homePaths(carol).nodeKey).mode & 0o777).toBe(0o600);
    const node = await serveBinary(carol, ["--executor", "echo"]);
    try {
      const sent = await runBinary(["--home", alpha, "send", "--agent", node.url, "--task", "hello carol", "--wait", "--json"]);
      expect(sent.code, sent.stderr).toBe(0);
      expect(JSON.parse(sent.stdout).artifacts[0].parts[0].text).toBe("hello carol");
    } finally {
      await node.stop();
    }
  });
});

describe("needs-renewal exit codes (binary)", () => {
  it("0 needs renewal, 1 does not, 3 no file, 255 unreadable, 2 usage", async () => {
    const past = new Date(Date.now() - 21 * DAY);
    const ca = await createCa({ name: "e2e CA", now: past });
    const due = join(root, "due.crt");
    const fine = join(root, "fine.crt");
    writeFileSync(due, (await issueLeaf({ ca, name: "x", sans: [], days: 30, now: past })).certPem);
    writeFileSync(fine, (await issueLeaf({ ca, name: "x", sans: [], days: 365, now: past })).certPem);
    writeFileSync(join(root, "junk.crt"), "junk");
    expect((await runBinary(["pki", "needs-renewal", due])).code).toBe(0);
    expect((await runBinary(["pki", "needs-renewal", fine])).code).toBe(1);
    expect((await runBinary(["pki", "needs-renewal", fine, "--within", "400"])).code).toBe(0);
    expect((await runBinary(["pki", "needs-renewal", join(root, "none.crt")])).code).toBe(3);
    expect((await runBinary(["pki", "needs-renewal", join(root, "junk.crt")])).code).toBe(255);
    expect((await runBinary(["pki", "needs-renewal", "--within", "soon"])).code).toBe(2);
  });
});

describe("serve warns as expiry nears", () => {
  it("logs a warning at start when the node certificate is past two thirds of its lifetime", async () => {
    const past = new Date(Date.now() - 21 * DAY);
    const ca = homePaths(join(root, "old-ca"));
    await initPki(ca, { name: "old-ca", now: past });
    const bundle = join(root, "aging.bundle");
    await issueBundle(ca, { name: "aging", days: 30, out: bundle, now: past });
    const home = join(root, "aging");
    await installBundle(ensureHome(homePaths(home)), bundle, { now: past });
    const node = await serveBinary(home, ["--executor", "echo"]);
    try {
      const log = await node.waitForLog(/past two thirds of its lifetime/);
      expect(log).toMatch(/warn this node's certificate is past two thirds of its lifetime and should be renewed name=aging expires=\S+ days_left=9 next=/);
    } finally {
      await node.stop();
    }
  });
});
