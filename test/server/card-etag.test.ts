/**
 * The served agent card (src/server/web-app.ts): signed, with an ETag stable across restarts although every
 * ECDSA signature differs, answering If-None-Match with 304, and changing when the signing certificate does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicKey } from "node:crypto";
import { signPublicKey } from "../../pki";
import type { AgentCard } from "../../src/protocol/types";
import { buildAgentCard, DEFAULT_SKILLS } from "../../src/server/agent-card";
import { signCardAs } from "../../src/server/card-signing";
import { createWebApp } from "../../src/server/web-app";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
const caller = { name: "alpha", fingerprint: "AA" };
const unsigned = buildAgentCard({
  name: "beta",
  description: "d",
  version: "1.0.0",
  advertisedUrl: "https://10.0.0.7:9443",
  skills: DEFAULT_SKILLS,
});

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
});
afterAll(() => fleet?.cleanup());

/** One start of the node: the card signed anew, served by a fresh web app. */
async function start(identity = { certPem: fleet.identity("beta").cert, keyPem: fleet.identity("beta").key }) {
  const card = await signCardAs(unsigned, identity);
  const web = createWebApp({ card: () => card, version: "1.0.0", startedAt: 0 });
  const get = (headers: Record<string, string> = {}) =>
    web.handle(new Request("https://beta/.well-known/agent-card.json", { headers }), caller);
  return { card, get };
}

describe("the served card", () => {
  it("is the signed card, with an ETag that two starts agree on although their signatures differ", async () => {
    const a = await start();
    const b = await start();
    expect(a.card.signatures![0].signature).not.toBe(b.card.signatures![0].signature);
    const ra = await a.get();
    const rb = await b.get();
    expect((await ra.json()) as AgentCard).toEqual(a.card);
    expect(ra.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(rb.headers.get("etag")).toBe(ra.headers.get("etag"));
    const cached = await b.get({ "if-none-match": ra.headers.get("etag") as string });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe("");
  });

  it("gets another ETag once signed by a renewed certificate (same key)", async () => {
    const b = fleet.identity("beta");
    const renewed = await signPublicKey({
      ca: fleet.ca(),
      name: "beta",
      sans: [],
      publicKey: createPublicKey(b.key).export({ type: "spki", format: "pem" }).toString(),
    });
    const before = (await (await start()).get()).headers.get("etag") as string;
    const after = await start({ certPem: renewed, keyPem: b.key });
    expect((await after.get()).headers.get("etag")).not.toBe(before);
    expect((await after.get({ "if-none-match": before })).status).toBe(200);
  });
});
