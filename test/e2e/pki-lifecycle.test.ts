/**
 * The fleet PKI's lifecycle through the compiled binary: what the CA records, expiry warnings in serve's log,
 * needs-renewal's exit codes for timers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:tls";
import {
  createCa,
  createCsr,
  createToken,
  inspectCert,
  installBundle,
  initPki,
  issueBundle,
  issueLeaf,
} from "../../pki";
import { startGatedModel } from "../fakes/gated-model";
import { rpc, userMessage } from "../helpers/rpc";
import { ensureHome, homePaths } from "../../src/home";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { tempDir } from "../helpers/temp-dir";

const DAY = 86_400_000;
/** For the tests that start many binaries: their time is the machine's load as much as theirs. */
const LONG_TEST_MS = 90_000;
let root: string;
beforeAll(() => {
  root = tempDir("a2a-pki-e2e-");
});

describe("the CA keeps records (binary)", () => {
  it("issue twice is refused, --replace revokes, list shows it", async () => {
    const ca = join(root, "ca");
    expect((await runBinary(["--home", ca, "init-pki", "--name", "ca"])).code).toBe(0);
    expect((await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b1")])).code).toBe(0);
    const again = await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b2")]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^a2a-node: "beta" already has a valid certificate \(serial [0-9A-F]+, expires .*\)\n  next: pass --replace/,
    );
    expect((await runBinary(["--home", ca, "pki", "issue", "beta", "--out", join(root, "b2"), "--replace"])).code).toBe(
      0,
    );
    const list = JSON.parse((await runBinary(["--home", ca, "pki", "list", "--json"])).stdout);
    expect(list.map((c: { name: string; status: string }) => `${c.name}:${c.status}`)).toEqual([
      "ca:valid",
      "beta:revoked",
      "beta:valid",
    ]);
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
      const sent = await runBinary([
        "--home",
        alpha,
        "send",
        "--agent",
        node.url,
        "--task",
        "hello carol",
        "--wait",
        "--json",
      ]);
      expect(sent.code, sent.stderr).toBe(0);
      expect(JSON.parse(sent.stdout).artifacts[0].parts[0].text).toBe("hello carol");
      // By a URL no peer is registered at: any fleet member is accepted, and which one is said.
      const carolPin = JSON.parse((await runBinary(["--home", carol, "pki", "show", "--json"])).stdout).keyPin;
      expect(sent.stderr).toContain(
        `${node.url} is fleet node 'carol' (key ${carolPin}); to check that name and key every time, add it: a2a-node peers add carol ${node.url} --pin\n`,
      );
    } finally {
      await node.stop();
    }
  });
});

describe("revocation (binary): a stolen machine is cut off fleet-wide", () => {
  const served: ServedBinary[] = [];
  afterAll(async () => {
    for (const n of served) await n.stop("SIGKILL");
  });
  const home = (name: string) => join(root, `rev-${name}`);
  const cli = (name: string, ...args: string[]) => runBinary(["--home", home(name), ...args]);
  const tlsOf = (name: string) => {
    const p = homePaths(home(name));
    return {
      cert: readFileSync(p.nodeCert, "utf8"),
      key: readFileSync(p.nodeKey, "utf8"),
      ca: readFileSync(p.caCert, "utf8"),
    };
  };
  /**
   * A JSON-RPC call as `who` on a new connection (a pooled one may have been closed by the revocation): the
   * HTTP status, or the error code when the connection was refused.
   */
  const callAs = async (who: string, url: string) => {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
        keepalive: false,
        tls: tlsOf(who),
      } as RequestInit);
      await res.arrayBuffer();
      return res.status;
    } catch (err) {
      return (err as { code?: string }).code ?? "error";
    }
  };

  // A dozen binary runs and two restarts: ~15-22 s alone on this VM, past the default 30 s under a full, loaded run.
  it(
    "pki revoke on the CA: the CA node refuses at once, a node fetching from it on SIGHUP, send refuses it as a server",
    async () => {
      expect((await cli("alpha", "init-pki", "--name", "alpha")).code).toBe(0);
      for (const name of ["beta", "gamma", "delta"]) {
        const bundle = join(root, `rev-${name}.bundle`);
        expect((await cli("alpha", "pki", "issue", name, "--out", bundle)).code).toBe(0);
        expect((await cli(name, "init-pki", "--bundle", bundle)).code).toBe(0);
      }
      // alpha holds the CA and re-reads its list every second; beta fetches alpha's, on SIGHUP here.
      const alpha = await serveBinary(home("alpha"), [
        "--executor",
        "echo",
        "--crl-refresh",
        "1",
        "--log-refusals-per-minute",
        "1000",
      ]);
      served.push(alpha);
      expect((await cli("beta", "peers", "add", "alpha", alpha.url)).code).toBe(0);
      const beta = await serveBinary(home("beta"), [
        "--executor",
        "echo",
        "--ca-peer",
        "alpha",
        "--crl-refresh",
        "3600",
        "--log-refusals-per-minute",
        "1000",
      ]);
      served.push(beta);
      const gamma = await serveBinary(home("gamma"), ["--executor", "echo"]);
      served.push(gamma);
      expect(await callAs("gamma", alpha.url)).toBe(200);
      expect(await callAs("gamma", beta.url)).toBe(200);
      const sentBefore = await cli("alpha", "send", "--agent", gamma.url, "--task", "hi", "--wait");
      expect(sentBefore.code, sentBefore.stderr).toBe(0);

      const revoked = await cli("alpha", "pki", "revoke", "gamma", "--reason", "laptop stolen");
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toMatch(/^revoked "gamma" serial ([0-9A-F]+) /);
      const serial = /serial ([0-9A-F]+)/.exec(revoked.stdout)![1];

      // The CA node judges the next connection against the list revoke wrote: no wait, no signal needed (see
      // test/e2e/revocation.test.ts for what it says and the connections it closes).
      expect(await callAs("gamma", alpha.url)).toBe(403);
      await alpha.waitForLine({ msg: "revocation list in force", source: /crl\.pem$/, revoked: 1 });
      expect(
        await alpha.waitForLine({
          msg: "refused a connection",
          kind: "revoked",
          reason: new RegExp(`^client certificate refused: its certificate \\(serial ${serial}\\) was revoked on `),
        }),
      ).toBeTruthy();
      expect(await callAs("delta", alpha.url)).toBe(200);

      // beta fetches from its ca_peer on SIGHUP (and every crl_refresh_seconds).
      expect(await callAs("gamma", beta.url)).toBe(200);
      beta.signal("SIGHUP");
      await beta.waitForLine({ msg: "revocation list in force", source: "peer 'alpha'", revoked: 1 });
      expect(await callAs("gamma", beta.url)).toBe(403);
      expect(
        await beta.waitForLine({
          msg: "refused a connection",
          kind: "revoked",
          reason: /^client certificate refused: its certificate \(serial [0-9A-F]+\) was revoked/,
        }),
      ).toBeTruthy();
      expect(await callAs("delta", beta.url)).toBe(200);
      expect(existsSync(homePaths(home("beta")).crl)).toBe(true);

      // As a server, too: alpha's send (and beta's, from the list its daemon fetched) refuse gamma.
      for (const from of ["alpha", "beta"]) {
        const sent = await cli(from, "send", "--agent", gamma.url, "--task", "secrets", "--wait");
        expect(sent.code).toBe(8);
        expect(sent.stderr).toMatch(
          new RegExp(
            `is not who we expected: the server's certificate is not a fleet member's: its certificate \\(serial ${serial}\\) was revoked on `,
          ),
        );
      }

      // An air-gapped node takes the list by hand.
      const crl = join(root, "fleet.crl");
      expect((await cli("alpha", "pki", "export-crl", "--out", crl)).code).toBe(0);
      expect((await cli("delta", "send", "--agent", gamma.url, "--task", "hi", "--wait")).code).toBe(0);
      const imported = await cli("delta", "pki", "import-crl", crl);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toMatch(/^installed revocation list number \d+ \(1 revoked\)/);
      expect((await cli("delta", "send", "--agent", gamma.url, "--task", "hi", "--wait")).code).toBe(8);
    },
    LONG_TEST_MS,
  );
});

describe("renewal (binary): the same name, SANs and key, no restart", () => {
  const served: ServedBinary[] = [];
  afterAll(async () => {
    for (const n of served) await n.stop("SIGKILL");
  });
  const home = (name: string) => join(root, `ren-${name}`);
  const cli = (name: string, ...args: string[]) => runBinary(["--home", home(name), ...args]);
  const tlsOf = (name: string) => {
    const p = homePaths(home(name));
    return {
      cert: readFileSync(p.nodeCert, "utf8"),
      key: readFileSync(p.nodeKey, "utf8"),
      ca: readFileSync(p.caCert, "utf8"),
    };
  };
  /** The fingerprint of the certificate a node serves on a new connection. */
  const servedFingerprint = (url: string, as: string) =>
    new Promise<string>((resolve, reject) => {
      const u = new URL(url);
      const me = tlsOf(as);
      const socket = connect(
        { host: u.hostname, port: Number(u.port), ca: me.ca, cert: me.cert, key: me.key, servername: "localhost" },
        () => {
          resolve(socket.getPeerCertificate().fingerprint256);
          socket.end();
        },
      );
      socket.on("error", reject);
    });
  const post = async (url: string, as: string, body: unknown) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      tls: tlsOf(as),
    } as RequestInit);
    return { status: res.status, body: (await res.json()) as { error?: string; cert?: string } };
  };

  it("pki renew asks the CA node, and the running serve uses the new certificate for new connections while a task runs", async () => {
    expect((await cli("alpha", "init-pki", "--name", "alpha")).code).toBe(0);
    const bundle = join(root, "ren-beta.bundle");
    expect(
      (await cli("alpha", "pki", "issue", "beta", "--san", "beta.lan", "--days", "30", "--out", bundle)).code,
    ).toBe(0);
    expect((await cli("beta", "init-pki", "--bundle", bundle)).code).toBe(0);
    const alpha = await serveBinary(home("alpha"), ["--executor", "echo"]);
    served.push(alpha);
    expect((await cli("beta", "peers", "add", "alpha", alpha.url)).code).toBe(0);
    const model = startGatedModel();
    try {
      const beta = await serveBinary(home("beta"), ["--executor", "openai", "--model-url", model.url]);
      served.push(beta);
      const before = await servedFingerprint(beta.url, "alpha");
      const oldId = tlsOf("beta");

      const text = `[hold] ${crypto.randomUUID()}`;
      const inFlight = rpc(beta.url, tlsOf("alpha"), "SendMessage", { message: userMessage(text) });
      await model.arrival(text);

      const renewed = await cli("beta", "pki", "renew", "--ca-peer", "alpha", "--json");
      expect(renewed.code, renewed.stderr).toBe(0);
      const r = JSON.parse(renewed.stdout);
      expect(r).toMatchObject({
        name: "beta",
        sans: ["beta", "localhost", "127.0.0.1", "beta.lan"],
        reloadedPid: beta.pid,
      });
      expect(Math.round((Date.parse(r.notAfter) - Date.now()) / DAY)).toBe(30);
      expect(statSync(homePaths(home("beta")).nodeKey).mode & 0o777).toBe(0o600);
      // The key is kept (pki renew --rekey makes a new one), so pins of beta's key hold.
      expect(readFileSync(homePaths(home("beta")).nodeKey, "utf8")).toBe(oldId.key);

      await beta.waitForLine({ msg: "reloaded", applied: "certificate" });
      const after = await servedFingerprint(beta.url, "alpha");
      expect(after).not.toBe(before);
      expect(after).toBe(r.fingerprint256);
      expect(
        await alpha.waitForLine({ msg: "renewed a certificate", level: "info", name: "beta", serial: /^[0-9A-F]+$/ }),
      ).toBeTruthy();

      model.release();
      const reply = await inFlight;
      expect(reply.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");

      // The CA recorded it as a renewal of the old one, which it superseded once the new one was in use: the
      // task in flight finished meanwhile, and the old certificate opens no connection any more.
      expect(r.previous.superseded).toBe("revoked now by peer 'alpha' (superseded: it saw the new one in use)");
      const list = JSON.parse((await cli("alpha", "pki", "list", "--json")).stdout);
      expect(
        list
          .filter((c: { name: string }) => c.name === "beta")
          .map((c: { how: string; status: string }) => `${c.how}:${c.status}`),
      ).toEqual(["bundle:revoked", "renew:valid"]);
      const withOld = await fetch(`${alpha.url}/health`, { tls: oldId } as RequestInit);
      expect(withOld.status).toBe(403);
      expect((await fetch(`${alpha.url}/health`, { tls: tlsOf("beta") } as RequestInit)).status).toBe(200);
    } finally {
      model.stop();
    }
  });

  it("an expired certificate on the CA machine: serve says to renew it there; pki renew does, keeping the key, so a peer's pin of it holds", async () => {
    // Issued 60 days ago for 30 days: expired a month ago, while the fleet CA is good for years.
    const ca = homePaths(home("expired-ca"));
    await initPki(ensureHome(ca), { name: "omega", days: 30, now: new Date(Date.now() - 60 * DAY) });
    const keyBefore = readFileSync(ca.nodeKey, "utf8");
    const pinBefore = JSON.parse((await cli("expired-ca", "pki", "show", "--json")).stdout).keyPin;

    const refused = await runBinary([
      "--home",
      home("expired-ca"),
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--executor",
      "echo",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /node\.crt expired on .*\n  next: renew it here with this home's fleet CA, keeping its key \(so pins of it hold\): a2a-node pki renew\n$/,
    );

    const renewed = await cli("expired-ca", "pki", "renew", "--json");
    expect(renewed.code, renewed.stderr).toBe(0);
    const r = JSON.parse(renewed.stdout);
    expect(r).toMatchObject({ name: "omega", rekeyed: false, keyPin: pinBefore });
    expect(Math.round((Date.parse(r.notAfter) - Date.now()) / DAY)).toBe(30);
    expect(readFileSync(ca.nodeKey, "utf8")).toBe(keyBefore);
    const list = JSON.parse((await cli("expired-ca", "pki", "list", "--json")).stdout);
    expect(
      list
        .filter((c: { name: string }) => c.name === "omega")
        .map((c: { how: string; status: string }) => `${c.how}:${c.status}`),
    ).toEqual(["init:expired", "renew:valid"]);

    // It serves again, and a node that pinned its key (before it expired) still sends to it.
    const omega = await serveBinary(home("expired-ca"), ["--executor", "echo"]);
    served.push(omega);
    const bundle = join(root, "ren-psi.bundle");
    expect((await cli("expired-ca", "pki", "issue", "psi", "--out", bundle)).code).toBe(0);
    expect((await cli("psi", "init-pki", "--bundle", bundle)).code).toBe(0);
    expect((await cli("psi", "peers", "add", "omega", omega.url, "--key-pin", pinBefore)).code).toBe(0);
    const sent = await cli("psi", "send", "--agent", "omega", "--task", "still you", "--wait", "--json");
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout).artifacts[0].parts[0].text).toBe("still you");
  });

  it("the renewal endpoint: only on the CA node, only for the caller's own certificate and name", async () => {
    const alpha = served[0];
    const beta = served[1];
    const { csrPem } = await createCsr({ name: "beta", sans: [] });
    const cert = tlsOf("beta").cert;
    const notCa = await post(`${beta.url}/pki/renew`, "alpha", { csr: csrPem, cert: tlsOf("alpha").cert });
    expect(notCa.status).toBe(404);
    expect(notCa.body.error).toMatch(/does not hold the fleet CA/);
    const other = await post(`${alpha.url}/pki/renew`, "alpha", { csr: csrPem, cert });
    expect(other.status).toBe(403);
    expect(other.body.error).toBe("renewal refused: the certificate sent is not the one this connection presented");
    const otherName = await post(`${alpha.url}/pki/renew`, "beta", {
      csr: (await createCsr({ name: "alpha", sans: [] })).csrPem,
      cert,
    });
    expect(otherName.status).toBe(403);
    expect(otherName.body.error).toBe(
      'renewal refused: the request is for "alpha", but the certificate renewed is "beta"',
    );
    expect((await post(`${alpha.url}/pki/renew`, "beta", { csr: "nope", cert })).status).toBe(400);
    const get = await fetch(`${alpha.url}/pki/renew`, { tls: tlsOf("beta") } as RequestInit);
    expect(get.status).toBe(405);
    // Without a client certificate there is no connection at all.
    const anonymous = await fetch(`${alpha.url}/pki/renew`, {
      method: "POST",
      body: "{}",
      tls: { ca: tlsOf("beta").ca },
    } as RequestInit).then(
      () => "answered",
      (e) => e.code,
    );
    expect(anonymous).not.toBe("answered");
  });

  // A dozen binary runs and two restarts: ~15-22 s alone on this VM, past the default 30 s under a full, loaded run.
  it(
    "a key pin survives renewal: a node pinned by name is still sent to after it renews; --rekey breaks the pin, saying so, and re-pinning mends it",
    async () => {
      const h = (name: string) => home(`pin-${name}`);
      const run = (name: string, ...args: string[]) => runBinary(["--home", h(name), ...args]);
      expect((await run("alpha", "init-pki", "--name", "alpha")).code).toBe(0);
      for (const name of ["beta", "gamma", "delta"]) {
        const bundle = join(root, `pin-${name}.bundle`);
        expect((await run("alpha", "pki", "issue", name, "--out", bundle)).code).toBe(0);
        expect((await run(name, "init-pki", "--bundle", bundle)).code).toBe(0);
      }
      const alpha = await serveBinary(h("alpha"), ["--executor", "echo"]);
      served.push(alpha);
      let beta = await serveBinary(h("beta"), ["--executor", "echo"]);
      served.push(beta);
      expect((await run("beta", "peers", "add", "alpha", alpha.url)).code).toBe(0);

      // alpha pins beta's key; gamma and delta pin beta's certificate, as before key pins.
      const added = await run("alpha", "peers", "add", "beta", beta.url, "--pin", "--json");
      expect(added.code, added.stderr).toBe(0);
      const keyPin = JSON.parse(added.stdout).keyPin as string;
      expect(keyPin).toMatch(/^spki:sha256:[A-Za-z0-9_-]{43}$/);
      expect(JSON.parse((await run("beta", "pki", "show", "--json")).stdout).keyPin).toBe(keyPin);
      const certFp = inspectCert(readFileSync(homePaths(h("beta")).nodeCert, "utf8")).fingerprint256;
      for (const name of ["gamma", "delta"])
        expect((await run(name, "peers", "add", "beta", beta.url, "--fingerprint", certFp)).code).toBe(0);
      // gamma contacts beta before the renewal: its certificate pin matches and becomes a key pin.
      const early = await run("gamma", "send", "--agent", "beta", "--task", "before", "--wait");
      expect(early.code, early.stderr).toBe(0);
      expect(early.stderr).toContain(
        `note: peer 'beta' was pinned by one certificate (renewal replaces it); now its key is pinned instead: ${keyPin}`,
      );
      expect(JSON.parse((await run("gamma", "peers", "list", "--json")).stdout)).toEqual([
        expect.objectContaining({ name: "beta", keyPin }),
      ]);

      const renewed = await run("beta", "pki", "renew", "--ca-peer", "alpha", "--json");
      expect(renewed.code, renewed.stderr).toBe(0);
      expect(JSON.parse(renewed.stdout)).toMatchObject({ rekeyed: false, keyPin, reloadedPid: beta.pid });
      await beta.waitForLine({ msg: "reloaded", applied: "certificate" });
      // A new certificate (delta's refusal below shows beta serves it), for the same key.
      expect(inspectCert(readFileSync(homePaths(h("beta")).nodeCert, "utf8")).fingerprint256).not.toBe(certFp);

      const sent = await run("alpha", "send", "--agent", "beta", "--task", "after renewal", "--wait");
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toBe("after renewal\n");
      expect((await run("gamma", "send", "--agent", "beta", "--task", "converted", "--wait")).code).toBe(0);
      // delta never contacted beta while its pinned certificate was in use: refused, saying it was a certificate pin.
      const stale = await run("delta", "send", "--agent", "beta", "--task", "x");
      expect(stale.code).toBe(8);
      expect(stale.stderr).toContain(
        `is not the pinned ${certFp} (a pin of one certificate, from before key pins: a renewal replaces the certificate)`,
      );
      expect(stale.stderr).toContain(`next: beta was pinned by one certificate, which its renewal has replaced:`);

      // A new key: pins of it fail, as 'pin' (not 'name'), until re-pinned.
      const rekeyed = await run("beta", "pki", "renew", "--ca-peer", "alpha", "--rekey");
      expect(rekeyed.code, rekeyed.stderr).toBe(0);
      expect(rekeyed.stdout).toContain(
        `the key changed: machines that pinned "beta" now refuse it until they pin it again.`,
      );
      await beta.stop();
      beta = await serveBinary(h("beta"), ["--executor", "echo", "--port", String(beta.port)]);
      served.push(beta);
      const refused = await run("alpha", "send", "--agent", "beta", "--task", "x");
      expect(refused.code).toBe(8);
      expect(refused.stderr).toMatch(
        new RegExp(
          `the server is 'beta' by its fleet certificate, but its public key spki:sha256:\\S+ is not the pinned ${keyPin.replace(/[-]/g, "\\-")}`,
        ),
      );
      expect(refused.stderr).toContain(
        `next: beta now holds another key ('pki renew --rekey' there, or another machine holds a 'beta' certificate)`,
      );
      expect((await run("alpha", "peers", "add", "beta", beta.url, "--pin", "--replace")).code).toBe(0);
      expect((await run("alpha", "send", "--agent", "beta", "--task", "re-pinned", "--wait")).code).toBe(0);
    },
    LONG_TEST_MS,
  );

  it("serve renews by itself once two thirds of the lifetime have passed, from its ca_peer", async () => {
    const past = new Date(Date.now() - 21 * DAY);
    const ca = homePaths(home("old-alpha"));
    await initPki(ca, { name: "old-alpha", now: past });
    const bundle = join(root, "ren-aging.bundle");
    await issueBundle(ca, { name: "aging", days: 30, out: bundle, now: past });
    await installBundle(ensureHome(homePaths(home("aging"))), bundle, { now: past });
    const alpha = await serveBinary(home("old-alpha"), ["--executor", "echo"]);
    served.push(alpha);
    // Pinned the way peers were before key pins (one certificate): the daemon converts it on first contact.
    const alphaFp = inspectCert(readFileSync(ca.nodeCert, "utf8")).fingerprint256;
    expect((await cli("aging", "peers", "add", "old-alpha", alpha.url, "--fingerprint", alphaFp)).code).toBe(0);
    const before = inspectCert(readFileSync(homePaths(home("aging")).nodeCert, "utf8"));
    const aging = await serveBinary(home("aging"), ["--executor", "echo", "--ca-peer", "old-alpha"]);
    served.push(aging);
    const line = await aging.waitForLine({ msg: "renewed this node's certificate; new connections use it" });
    expect(line).toMatchObject({
      level: "info",
      name: "aging",
      serial: expect.stringMatching(/^[0-9A-F]+$/),
      expires: expect.any(String),
      previous_expires: expect.any(String),
    });
    const after = inspectCert(readFileSync(homePaths(home("aging")).nodeCert, "utf8"));
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(Math.round((after.notAfter.getTime() - Date.now()) / DAY)).toBe(30);
    expect(await servedFingerprint(aging.url, "old-alpha")).toBe(after.fingerprint256);
    expect(statSync(homePaths(home("aging")).nodeKey).mode & 0o777).toBe(0o600);
    const alphaPin = JSON.parse((await cli("old-alpha", "pki", "show", "--json")).stdout).keyPin;
    expect(
      await aging.waitForLine({ msg: "converted a peer's certificate pin to a key pin", peer: "old-alpha" }),
    ).toMatchObject({ key_pin: alphaPin });
    expect(JSON.parse((await cli("aging", "peers", "list", "--json")).stdout)).toEqual([
      expect.objectContaining({ name: "old-alpha", keyPin: alphaPin }),
    ]);
  });
});

describe("join with a token (binary): one command, the key made where it stays", () => {
  const served: ServedBinary[] = [];
  afterAll(async () => {
    for (const n of served) await n.stop("SIGKILL");
  });
  const home = (name: string) => join(root, `join-${name}`);
  const cli = (name: string, ...args: string[]) => runBinary(["--home", home(name), ...args]);
  let alpha: ServedBinary;
  let enrollUrl: string;
  let fingerprint: string;
  const token = async (name: string, ...extra: string[]) => {
    const r = await cli("alpha", "pki", "token", "--name", name, "--json", ...extra);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as {
      token: string;
      caFingerprint: string;
      command: string;
      expiresAt: string;
      enrollUrl: string;
    };
  };

  beforeAll(async () => {
    expect((await cli("alpha", "init-pki", "--name", "alpha")).code).toBe(0);
    alpha = await serveBinary(home("alpha"), [
      "--executor",
      "echo",
      "--enroll-port",
      "0",
      "--log-refusals-per-minute",
      "1000",
    ]);
    served.push(alpha);
    enrollUrl = (await alpha.waitForLine({ msg: /^enrollment port open/ })).url as string;
    expect(enrollUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    fingerprint = `sha256:${inspectCert(readFileSync(homePaths(home("alpha")).caCert, "utf8"))
      .fingerprint256.replace(/:/g, "")
      .toLowerCase()}`;
  });

  it("pki token prints the command; join installs key, certificate and CA, registers the CA node, sets ca_peer; then it serves and delegates", async () => {
    const t = await token("beta", "--ttl", "15m", "--san", "beta.lan", "--days", "30");
    expect(t.caFingerprint).toBe(fingerprint);
    // The running node's enrollment port, where it listens (loopback here): the command works as printed.
    expect(t.command).toMatch(
      new RegExp(
        `^a2a-node join ${enrollUrl.replace(/[.]/g, "\\.")} --token beta\\.[A-Za-z0-9_-]{43} --ca-fingerprint ${fingerprint}$`,
      ),
    );
    expect((Date.parse(t.expiresAt) - Date.now()) / 60_000).toBeCloseTo(15, 0);

    const joined = await cli("beta", ...t.command.split(" ").slice(1));
    expect(joined.code, joined.stderr).toBe(0);
    expect(joined.stdout).toMatch(/^joined the fleet as "beta"\n/);
    expect(joined.stdout).toContain("SANs            beta, localhost, 127.0.0.1, beta.lan\n");
    expect(joined.stdout).toMatch(/registered peer 'alpha' at https:\/\/127\.0\.0\.1:\d+\n/);
    const paths = homePaths(home("beta"));
    expect(statSync(paths.nodeKey).mode & 0o777).toBe(0o600);
    expect(statSync(paths.secretsDir).mode & 0o777).toBe(0o700);
    expect(readFileSync(paths.caCert, "utf8")).toBe(readFileSync(homePaths(home("alpha")).caCert, "utf8"));
    expect(readFileSync(join(home("beta"), "config.toml"), "utf8")).toMatch(/^ca_peer = "alpha"/);
    const peers = JSON.parse((await cli("beta", "peers", "list", "--json")).stdout);
    expect(peers).toEqual([expect.objectContaining({ name: "alpha", url: alpha.url })]);
    expect(
      await alpha.waitForLine({
        msg: "enrolled a new fleet member",
        level: "info",
        name: "beta",
        serial: /^[0-9A-F]+$/,
      }),
    ).toBeTruthy();
    expect(alpha.log()).not.toContain(t.token.split(".")[1]);

    const beta = await serveBinary(home("beta"), ["--executor", "echo"]);
    served.push(beta);
    const sent = await cli(
      "beta",
      "send",
      "--agent",
      "alpha",
      "--task",
      "hello from a joined node",
      "--wait",
      "--json",
    );
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout).artifacts[0].parts[0].text).toBe("hello from a joined node");
    const list = JSON.parse((await cli("alpha", "pki", "list", "--json")).stdout);
    expect(list.find((c: { name: string }) => c.name === "beta")).toMatchObject({ how: "join", status: "valid" });
  });

  it("a used token, an unknown one and an expired one fail cleanly, writing no certificate", async () => {
    const t = await token("gamma");
    expect((await cli("gamma", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", fingerprint)).code).toBe(0);
    const reused = await cli("gamma2", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", fingerprint);
    expect(reused.code).toBe(1);
    expect(reused.stderr).toMatch(
      /^a2a-node: join token refused: it was already used, on \d{4}-.*\n  next: ask the CA machine for a new token/,
    );
    expect(existsSync(homePaths(home("gamma2")).nodeCert)).toBe(false);

    const unknown = await cli(
      "delta",
      "join",
      enrollUrl,
      "--token",
      `delta.${"x".repeat(43)}`,
      "--ca-fingerprint",
      fingerprint,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("join token refused: this CA never made it (or it was mistyped)");

    const expired = createToken(homePaths(home("alpha")), {
      name: "epsilon",
      ttlMs: 1000,
      now: new Date(Date.now() - 60_000),
    });
    const late = await cli("epsilon", "join", enrollUrl, "--token", expired.token, "--ca-fingerprint", fingerprint);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/join token refused: it expired on /);
    expect(existsSync(homePaths(home("epsilon")).nodeCert)).toBe(false);
    // The key made for it stays, and a new token joins with it.
    const key = readFileSync(homePaths(home("epsilon")).nodeKey, "utf8");
    const fresh = await token("epsilon");
    const retried = await cli("epsilon", "join", enrollUrl, "--token", fresh.token, "--ca-fingerprint", fingerprint);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain("(with the key an earlier attempt made)");
    expect(readFileSync(homePaths(home("epsilon")).nodeKey, "utf8")).toBe(key);
    expect(
      await alpha.waitForLine({
        msg: "refused an enrollment",
        level: "warn",
        name: "epsilon",
        reason: /^join token refused: it expired on /,
      }),
    ).toBeTruthy();
  });

  it("a wrong CA fingerprint stops before anything is sent or written", async () => {
    const t = await token("zeta");
    const wrong = `sha256:${"0".repeat(64)}`;
    const r = await cli("zeta", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", wrong);
    expect(r.code).toBe(8);
    expect(r.stderr).toMatch(
      /^a2a-node: the CA at https:\/\/127\.0\.0\.1:\d+ has fingerprint [0-9A-F:]+, not the pinned (00:){31}00\n  next: check --ca-fingerprint/,
    );
    expect(existsSync(homePaths(home("zeta")).nodeKey)).toBe(false);
    // The token was not spent.
    expect((await cli("zeta", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", fingerprint)).code).toBe(0);
    const bad = await cli("eta", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", "sha256:xyz");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--ca-fingerprint "sha256:xyz" is not a SHA-256 fingerprint');
    const notEnroll = await cli("eta", "join", alpha.url, "--token", t.token, "--ca-fingerprint", fingerprint);
    expect(notEnroll.code).toBe(8);
    expect(notEnroll.stderr).toMatch(
      /the TLS handshake with https:\/\/127\.0\.0\.1:\d+ failed \(\w+\): a port that wants a client certificate/,
    );
  });

  it("the enrollment port serves nothing else, and the A2A port still refuses every client without a certificate", async () => {
    const anonymous = (url: string, init: RequestInit = {}) =>
      fetch(url, { ...init, tls: { rejectUnauthorized: false } } as RequestInit).then(
        async (res) => ({ status: res.status, body: await res.text() }),
        (err) => ({ status: 0, body: String(err.code) }),
      );
    const rpcInit = {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    };
    for (const [path, init] of [
      ["/", rpcInit],
      ["/a2a/rpc", rpcInit],
      ["/.well-known/agent-card.json", {}],
      ["/health", {}],
      ["/pki/crl", {}],
      ["/pki/renew", { method: "POST", body: "{}" }],
    ] as [string, RequestInit][]) {
      const r = await anonymous(`${enrollUrl}${path}`, init);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.body).toContain("this port serves enrollment only");
    }
    expect((await anonymous(`${enrollUrl}/pki/ca`)).status).toBe(200);
    for (const path of ["/", "/health", "/pki/ca", "/pki/enroll", "/pki/crl"]) {
      const r = await anonymous(`${alpha.url}${path}`, path === "/pki/enroll" ? { method: "POST", body: "{}" } : {});
      expect([path, r.status]).toEqual([path, 0]);
    }
  });

  it("a client that dials the enrollment port as a peer is told what that port is, and where A2A is", async () => {
    const a2aPort = new URL(alpha.url).port;
    const said = new RegExp(
      `^a2a-node: ${enrollUrl.replace(/[.]/g, "\\.")} is the enrollment port of fleet node 'alpha' \\(it serves only 'a2a-node join'\\), not its A2A port; it serves A2A on port ${a2aPort}\n  next: use https://127\\.0\\.0\\.1:${a2aPort} instead`,
    );
    const t = await token("theta");
    expect((await cli("theta", "join", enrollUrl, "--token", t.token, "--ca-fingerprint", fingerprint)).code).toBe(0);
    for (const args of [
      ["send", "--agent", enrollUrl, "--task", "hello"],
      ["status", "--agent", enrollUrl, "--task-id", "01J00000000000000000000000"],
      ["peers", "ping", enrollUrl],
      ["peers", "discover", enrollUrl, "--yes"],
    ]) {
      const r = await cli("theta", ...args);
      expect([args[0], r.code]).toEqual([args[0], 4]);
      expect(r.stderr).toMatch(said);
      // Not the advice to pin what answered there, nor an error without a code.
      expect(r.stderr).not.toContain("to check that name and key every time");
      expect(r.stderr).not.toContain("undefined");
    }
    expect(
      JSON.parse((await cli("theta", "peers", "list", "--json")).stdout).map((p: { name: string }) => p.name),
    ).toEqual(["alpha"]);
  });

  it("a node without the CA key does not open an enrollment port", async () => {
    const gamma = await serveBinary(home("gamma"), ["--executor", "echo", "--enroll-port", "0"]);
    served.push(gamma);
    expect(gamma.lines()).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "enroll_port is set, but this home does not hold the fleet CA: no enrollment port",
      }),
    );
    expect(gamma.log()).not.toContain("enrollment port open");
  });
});

describe("an encrypted CA key (binary): the CA node signs only with its passphrase", () => {
  const PASS = "correct horse battery staple";
  const served: ServedBinary[] = [];
  afterAll(async () => {
    for (const n of served) await n.stop("SIGKILL");
  });
  const home = (name: string) => join(root, `enc-${name}`);
  const cli = (name: string, env: Record<string, string>, ...args: string[]) =>
    runBinary(["--home", home(name), ...args], env);

  it("without the passphrase serve warns and enrollment fails saying why; with it, a machine joins", async () => {
    expect(
      (await cli("alpha", { A2A_NODE_CA_PASSPHRASE: PASS }, "init-pki", "--name", "alpha", "--encrypt-ca-key")).code,
    ).toBe(0);
    const fp = `sha256:${inspectCert(readFileSync(homePaths(home("alpha")).caCert, "utf8")).fingerprint256.replace(/:/g, "")}`;
    const locked = await serveBinary(home("alpha"), ["--executor", "echo", "--enroll-port", "0"]);
    served.push(locked);
    // Made while the node serves enrollment (pki token prints its URL; it refuses when there is none).
    const t1 = JSON.parse((await cli("alpha", {}, "pki", "token", "--name", "beta", "--json")).stdout).token;
    expect(locked.lines()).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "the fleet CA key is encrypted and no passphrase is set: renewals and enrollments by this node will fail",
      }),
    );
    const url1 = (await locked.waitForLine({ msg: /^enrollment port open/ })).url as string;
    const refused = await cli("beta", {}, "join", url1, "--token", t1, "--ca-fingerprint", fp);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /cannot use the fleet CA key .*ca\.key: it is encrypted and no passphrase was given/,
    );
    expect(refused.stderr).not.toContain(PASS);
    await locked.stop();

    const open = await serveBinary(home("alpha"), ["--executor", "echo", "--enroll-port", "0"], {
      A2A_NODE_CA_PASSPHRASE: PASS,
    });
    served.push(open);
    expect(open.log()).not.toContain("no passphrase is set");
    const url2 = (await open.waitForLine({ msg: /^enrollment port open/ })).url as string;
    const joined = await cli("beta", {}, "join", url2, "--token", t1, "--ca-fingerprint", fp);
    expect(joined.code, joined.stderr).toBe(0);
    expect(open.log()).not.toContain(PASS);
    const check = await runBinary(["--home", home("alpha"), "serve", "--check"], { A2A_NODE_CA_PASSPHRASE: PASS });
    expect(check.stdout).toMatch(/ca_passphrase_file = \(set\)/);
    expect(check.stdout).not.toContain(PASS);
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
      const line = await node.waitForLine({
        msg: "this node's certificate is past two thirds of its lifetime and should be renewed",
      });
      expect(line).toMatchObject({
        level: "warn",
        name: "aging",
        days_left: 9,
        next: expect.any(String),
        expires: expect.any(String),
      });
    } finally {
      await node.stop();
    }
  });
});
