/** The optional SPIFFE ID: a URI SAN spiffe://DOMAIN/NAME in every certificate of a fleet that has a trust domain. */
import { describe, expect, it } from "vitest";
import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureHome, homePaths } from "../../src/home";
import {
  createCsr,
  enrollWithToken,
  createToken,
  initPki,
  installBundle,
  issueBundle,
  loadNodeIdentity,
  openCaRegistry,
  readBundle,
  renewRecorded,
  SPIFFE_DOMAIN,
} from "../../pki";
import { listenMtls } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { mtlsFetch } from "../../src/client/mtls-fetch";
import { bufferIo } from "../../src/cli/io";
import { pkiCommand } from "../../src/cli/commands/pki";
import { tempDirs } from "./helpers";

const tmp = tempDirs();
const uriOf = (pem: string) => new X509Certificate(pem).subjectAltName?.split(", ").filter((s) => s.startsWith("URI:"));

describe("SPIFFE IDs", () => {
  it("a fleet with a trust domain puts spiffe://DOMAIN/NAME in every certificate: its own, bundles, joins, renewals", async () => {
    const ca = homePaths(join(tmp(), "alpha"));
    await initPki(ca, { name: "alpha", spiffeDomain: "fleet.example" });
    expect(uriOf(readFileSync(ca.nodeCert, "utf8"))).toEqual(["URI:spiffe://fleet.example/alpha"]);
    const own = await loadNodeIdentity(ca);
    expect(own.uris).toEqual(["spiffe://fleet.example/alpha"]);
    expect(own.sans).not.toContain("URI:spiffe://fleet.example/alpha");

    const out = join(tmp(), "beta.bundle");
    await issueBundle(ca, { name: "beta", out });
    const beta = await readBundle(out);
    expect(uriOf(beta.cert)).toEqual(["URI:spiffe://fleet.example/beta"]);

    const t = createToken(ca, { name: "gamma", ttlMs: 60_000 });
    const joined = await enrollWithToken(ca, {
      token: t.token,
      csrPem: (await createCsr({ name: "gamma", sans: [] })).csrPem,
    });
    expect(uriOf(joined.certPem)).toEqual(["URI:spiffe://fleet.example/gamma"]);

    const betaHome = homePaths(join(tmp(), "beta"));
    await installBundle(ensureHome(betaHome), out);
    const betaId = await loadNodeIdentity(betaHome);
    const reg = openCaRegistry(ca);
    const renewed = await renewRecorded(ca, reg, {
      csrPem: (await createCsr({ name: "beta", sans: [] })).csrPem,
      currentCertPem: betaId.certPem,
      presented: { name: "beta", fingerprint256: betaId.fingerprint256 },
    });
    expect(uriOf(renewed.certPem)).toEqual(["URI:spiffe://fleet.example/beta"]);
    expect(reg.bySerial(new X509Certificate(renewed.certPem).serialNumber)?.sans).toEqual(betaId.sans);
    reg.close();

    // Over mutual TLS, members with SPIFFE IDs know each other by name as before.
    const server = await listenMtls({
      host: "127.0.0.1",
      port: 0,
      cert: readFileSync(ca.nodeCert, "utf8"),
      key: readFileSync(ca.nodeKey, "utf8"),
      ca: readFileSync(ca.caCert, "utf8"),
      maxBodyBytes: 1024,
      tooLarge: tooLargeResponse,
      onRequest: async (_req, caller) => ({ status: 200, body: caller.name }),
    });
    try {
      const res = await mtlsFetch({ cert: beta.cert, key: beta.key, ca: beta.caCert }, { name: "alpha" })(
        `${server.url}/`,
        {},
      );
      expect(await res.text()).toBe("beta");
    } finally {
      await server.close();
    }
  });

  it("pki spiffe-domain shows, sets and clears it; a bad domain is refused; without one no URI is issued", async () => {
    const ca = homePaths(join(tmp(), "alpha"));
    await initPki(ca, { name: "alpha" });
    expect(uriOf(readFileSync(ca.nodeCert, "utf8"))).toEqual([]);
    const run = async (...argv: string[]) => {
      const io = bufferIo();
      await pkiCommand.run(["spiffe-domain", ...argv], { io, home: ca.root });
      return io.out();
    };
    expect(await run()).toBe("no SPIFFE trust domain: certificates carry no SPIFFE ID\n");
    expect(await run("corp.example")).toMatch(
      /^SPIFFE trust domain: corp\.example \(certificates issued from now on carry spiffe:\/\/corp\.example\/NAME/,
    );
    const reg = openCaRegistry(ca);
    expect(reg.setting(SPIFFE_DOMAIN)).toBe("corp.example");
    reg.close();
    const out = join(tmp(), "b");
    await issueBundle(ca, { name: "beta", out });
    expect(uriOf((await readBundle(out)).cert)).toEqual(["URI:spiffe://corp.example/beta"]);
    expect(JSON.parse(await run("--clear", "--json"))).toEqual({ spiffeDomain: null });
    const err = await pkiCommand
      .run(["spiffe-domain", "Not A Domain"], { io: bufferIo(), home: ca.root })
      .catch((e) => e);
    expect(err.message).toMatch(/^invalid name "Not A Domain": a SPIFFE trust domain has/);
    const untouched = join(tmp(), "x");
    await expect(initPki(homePaths(untouched), { name: "x", spiffeDomain: "bad..domain" })).rejects.toMatchObject({
      code: "BAD_NAME",
    });
    expect(existsSync(untouched)).toBe(false);
  });
});
