/**
 * The /pki/ routes' own per-peer limits: any /pki/ request (PKI_RATE), and renewals on top (RENEW_RATE: a few
 * an hour). Clocks are the limiters' own (injected), so an hour passes in a line; the revocation state is the
 * real one over a temp folder.
 */
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { createPkiRoutes, PKI_RATE, RENEW_RATE } from "../../src/fleet/pki-routes";
import { RevocationState } from "../../src/fleet/revocation-state";
import { PeerRateLimiter } from "../../src/server/rate-limit";
import { createLogger } from "../../src/log";
import type { CallerIdentity } from "../../src/rpc/caller";
import type { HttpRequest } from "../../src/server/http1";
import { tempDir } from "../helpers/temp-dir";

const dir = tempDir("a2a-pki-routes-");

const caller = (name: string): CallerIdentity => ({ name, fingerprint: `${name}-fp` });
const req = (method: string, target: string): HttpRequest => ({
  method,
  target,
  headers: new Map(),
  body: Buffer.from("{}"),
});

function routes() {
  let t = 0;
  const now = () => t;
  let renewed = 0;
  const r = createPkiRoutes({
    revocations: new RevocationState(
      join(dir, "crl.pem"),
      () => ({ caPem: "", name: "alpha", serialNumber: "01" }),
      createLogger(() => {}),
    ),
    renew: async () => ({ status: 200, body: String(++renewed) }),
    limiter: new PeerRateLimiter(PKI_RATE, now),
    renewLimiter: new PeerRateLimiter(RENEW_RATE, now),
  });
  return { r, advance: (ms: number) => void (t += ms), renewed: () => renewed };
}

describe("the /pki/ routes' rate limits", () => {
  it("GET /pki/crl: 30 at once per peer, then one a second, 429 with Retry-After past it; other peers keep theirs", async () => {
    const { r, advance } = routes();
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await r(req("GET", "/pki/crl"), caller("beta"), "/pki/crl")).status);
    // 404: this node holds no list (nothing revoked); the limit comes before that.
    expect(statuses).toEqual([...Array(PKI_RATE.burst).fill(404), ...Array(10).fill(429)]);
    const over = await r(req("GET", "/pki/crl"), caller("beta"), "/pki/crl");
    expect(over.headers).toMatchObject({ "retry-after": "1", "content-type": "application/json" });
    expect(JSON.parse(String(over.body)).error).toBe(
      "rate limit: retry after 1 s (this node answers 1 /pki/ request per second from one peer, 30 at once)",
    );
    expect((await r(req("GET", "/pki/crl"), caller("gamma"), "/pki/crl")).status).toBe(404);
    advance(1000);
    expect((await r(req("GET", "/pki/crl"), caller("beta"), "/pki/crl")).status).toBe(404);
    expect((await r(req("GET", "/pki/crl"), caller("beta"), "/pki/crl")).status).toBe(429);
  });

  it("POST /pki/renew: 5 per peer at once, then 5 an hour; a refused one never reaches the CA", async () => {
    const { r, advance, renewed } = routes();
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await r(req("POST", "/pki/renew"), caller("beta"), "/pki/renew")).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(renewed()).toBe(5);
    const over = await r(req("POST", "/pki/renew"), caller("beta"), "/pki/renew");
    expect(over.headers?.["retry-after"]).toBe("720"); // one renewal every 12 minutes
    expect(JSON.parse(String(over.body)).error).toBe(
      "rate limit: retry after 720 s (this node renews at most 5 certificates an hour for one peer)",
    );
    // A GET reaches the handler (which answers it 405) without taking a renewal: it signs nothing.
    expect((await r(req("GET", "/pki/renew"), caller("beta"), "/pki/renew")).status).toBe(200);
    expect((await r(req("POST", "/pki/renew"), caller("gamma"), "/pki/renew")).status).toBe(200);
    advance(12 * 60_000);
    expect((await r(req("POST", "/pki/renew"), caller("beta"), "/pki/renew")).status).toBe(200);
    expect((await r(req("POST", "/pki/renew"), caller("beta"), "/pki/renew")).status).toBe(429);
    expect(renewed()).toBe(5 + 1 + 1 + 1); // beta's five, its GET, gamma's, beta's after 12 minutes
  });
});
