/**
 * One-time join tokens on a real CA home: stored hashed, for one name, spent once, expiring.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import {
  createCsr,
  createToken,
  enrollWithToken,
  initPki,
  inspectCert,
  issueBundle,
  openCaRegistry,
  PkiError,
  tokenHash,
  tokenName,
} from "../../pki";
import { tempDirs } from "./helpers";

const tmp = tempDirs();
const HOUR = 3_600_000;

async function caHome() {
  const paths = homePaths(join(tmp(), "alpha"));
  await initPki(paths, { name: "alpha" });
  return paths;
}

async function refusal(p: Promise<unknown>): Promise<PkiError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  return err as PkiError;
}

describe("createToken", () => {
  it("makes NAME.SECRET, and the registry keeps only its hash", async () => {
    const ca = await caHome();
    const t = createToken(ca, { name: "Beta", ttlMs: HOUR, sans: ["10.0.0.7"], days: 30 });
    expect(t.token).toMatch(/^beta\.[A-Za-z0-9_-]{43}$/);
    expect(tokenName(t.token)).toBe("beta");
    expect((t.expiresAt.getTime() - Date.now()) / HOUR).toBeCloseTo(1, 2);
    const reg = openCaRegistry(ca);
    expect(reg.token(tokenHash(t.token))).toMatchObject({
      name: "beta",
      sans: ["localhost", "127.0.0.1", "10.0.0.7"],
      days: 30,
      replace: false,
    });
    reg.close();
    const file = readFileSync(ca.caRegistry);
    expect(file.includes(Buffer.from(t.token.split(".")[1]))).toBe(false);
  });

  it("refuses a name that holds a valid certificate unless --replace, and TTLs out of range", async () => {
    const ca = await caHome();
    await issueBundle(ca, { name: "beta", out: join(tmp(), "b") });
    expect(() => createToken(ca, { name: "beta", ttlMs: HOUR })).toThrow(
      expect.objectContaining({ code: "NAME_HAS_CERT" }),
    );
    expect(createToken(ca, { name: "beta", ttlMs: HOUR, replace: true }).name).toBe("beta");
    expect(() => createToken(ca, { name: "gamma", ttlMs: 8 * 24 * HOUR })).toThrow(
      /a join token lives from 1 second to 7 days/,
    );
    expect(() => createToken(ca, { name: "local", ttlMs: HOUR })).toThrow(
      expect.objectContaining({ code: "RESERVED_NAME" }),
    );
  });

  it("tokenName refuses anything not shaped like a token", () => {
    for (const bad of ["", "beta", "beta.short", "Beta." + "a".repeat(43), "local." + "a".repeat(43)])
      expect(() => tokenName(bad)).toThrow(PkiError);
  });
});

describe("enrollWithToken", () => {
  it("issues the token's name, SANs and validity for the request's key, once", async () => {
    const ca = await caHome();
    const t = createToken(ca, { name: "beta", ttlMs: HOUR, sans: ["beta.lan"], days: 30 });
    const { csrPem } = await createCsr({ name: "beta", sans: ["evil.example"] });
    const r = await enrollWithToken(ca, { token: t.token, csrPem });
    const cert = inspectCert(r.certPem);
    expect(cert.subjectCn).toBe("beta");
    expect(cert.sans).toEqual(["beta", "localhost", "127.0.0.1", "beta.lan"]);
    expect(Math.round((cert.notAfter.getTime() - Date.now()) / (24 * HOUR))).toBe(30);
    const reg = openCaRegistry(ca);
    expect(reg.bySerial(cert.serialNumber)).toMatchObject({ how: "join" });
    expect(reg.token(tokenHash(t.token))?.usedAt).toBeInstanceOf(Date);
    reg.close();

    const again = await refusal(
      enrollWithToken(ca, { token: t.token, csrPem: (await createCsr({ name: "beta", sans: [] })).csrPem }),
    );
    expect(again.code).toBe("BAD_TOKEN");
    expect(again.message).toMatch(/^join token refused: it was already used, on \d{4}-/);
  });

  it("refuses an unknown, an expired, or a mismatched token, without spending it", async () => {
    const ca = await caHome();
    const { csrPem } = await createCsr({ name: "beta", sans: [] });
    const unknown = await refusal(enrollWithToken(ca, { token: `beta.${"A".repeat(43)}`, csrPem }));
    expect(unknown.message).toBe("join token refused: this CA never made it (or it was mistyped)");

    const old = createToken(ca, { name: "beta", ttlMs: 1000, now: new Date(Date.now() - 5000) });
    expect((await refusal(enrollWithToken(ca, { token: old.token, csrPem }))).message).toMatch(
      /^join token refused: it expired on /,
    );

    const t = createToken(ca, { name: "beta", ttlMs: HOUR });
    const other = await refusal(
      enrollWithToken(ca, { token: t.token, csrPem: (await createCsr({ name: "gamma", sans: [] })).csrPem }),
    );
    expect(other.message).toBe('join token refused: it is for "beta", but the request is for "gamma"');
    // A token whose name part was edited is another token: unknown.
    const edited = `gamma.${t.token.split(".")[1]}`;
    expect((await refusal(enrollWithToken(ca, { token: edited, csrPem }))).message).toMatch(/never made it/);
    // Still usable after those refusals.
    expect((await enrollWithToken(ca, { token: t.token, csrPem })).record.name).toBe("beta");
  });

  it("two machines racing with one token: one joins, the other is refused", async () => {
    const ca = await caHome();
    const t = createToken(ca, { name: "beta", ttlMs: HOUR });
    const csrs = await Promise.all([createCsr({ name: "beta", sans: [] }), createCsr({ name: "beta", sans: [] })]);
    const results = await Promise.allSettled(
      csrs.map((c) => enrollWithToken(ca, { token: t.token, csrPem: c.csrPem })),
    );
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const reg = openCaRegistry(ca);
    expect(reg.list().filter((c) => c.name === "beta")).toHaveLength(1);
    reg.close();
  });
});
