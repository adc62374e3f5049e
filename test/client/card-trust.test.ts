/**
 * Signed agent cards: a node signs its card with its own fleet key (src/server/card-signing.ts), a client
 * trusts it only once the signature holds against the fleet CA and the name the connection proved
 * (src/client/card-trust.ts). Certificates from our PKI (a real fleet in a temp folder) and crafted ones.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { X509Certificate } from "node:crypto";
import { keyPinOf } from "../../pki";
import { CardTrustError, verifyFleetCard } from "../../src/client/card-trust";
import {
  cardSigningInput,
  readSignatureHeader,
  signAgentCard,
  verifyCardSignature,
  withoutEmptyMembers,
} from "../../src/protocol/card-signature";
import { canonicalJson } from "../../src/protocol/canonical-json";
import type { AgentCard } from "../../src/protocol/types";
import { buildAgentCard, DEFAULT_SKILLS } from "../../src/server/agent-card";
import { signCardAs } from "../../src/server/card-signing";
import { importPrivateKeyPem } from "../../pki/keys";
import { craftCert } from "../helpers/crafted-certs";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
const card: AgentCard = buildAgentCard({
  name: "beta",
  description: "beta's agent",
  version: "1.2.3",
  advertisedUrl: "https://10.0.0.7:9443",
  skills: DEFAULT_SKILLS,
  pushNotifications: true,
});
const id = (name: string) => ({ certPem: fleet.identity(name).cert, keyPem: fleet.identity(name).key });

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
});
afterAll(() => fleet?.cleanup());

async function refusal(p: Promise<unknown>): Promise<CardTrustError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CardTrustError);
  return err as CardTrustError;
}

describe("signing a card", () => {
  it("adds one ES256 JWS with the node's certificate (x5c) and key pin (kid) in the protected header; the card is otherwise unchanged", async () => {
    const signed = await signCardAs(card, id("beta"));
    const { signatures, ...rest } = signed;
    expect(rest).toEqual(card);
    expect(signatures).toHaveLength(1);
    const header = readSignatureHeader(signatures![0]);
    const leaf = new X509Certificate(fleet.identity("beta").cert);
    expect(header).toEqual({ alg: "ES256", typ: "JOSE", kid: keyPinOf(leaf), x5c: [leaf.raw.toString("base64")] });
    // JWS ECDSA: r||s, 64 bytes for P-256 (RFC 7518 3.4), not DER.
    expect(Buffer.from(signatures![0].signature, "base64url")).toHaveLength(64);
    expect(signatures![0]).not.toHaveProperty("header");
  });

  it("covers the RFC 8785 form of the card without `signatures` and without empty members, whatever the member order", async () => {
    const signed = await signCardAs(card, id("beta"));
    const sig = signed.signatures![0];
    // The card's mutual-TLS requirement has an empty scope list: it is left out of what is signed, as the SDKs do.
    expect(card.securityRequirements).toEqual([{ schemes: { mtls: { list: [] } } }]);
    const { securityRequirements: _empty, ...nonEmpty } = card;
    const payload = Buffer.from(canonicalJson(nonEmpty)).toString("base64url");
    expect(new TextDecoder().decode(cardSigningInput(signed, sig.protected))).toBe(`${sig.protected}.${payload}`);
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as AgentCard;
    const spki = new Uint8Array(
      new X509Certificate(fleet.identity("beta").cert).publicKey.export({ type: "spki", format: "der" }),
    );
    expect(await verifyCardSignature(reordered, sig, spki)).toBe(true);
  });

  it("re-signing replaces the old signature rather than piling up", async () => {
    const twice = await signCardAs(await signCardAs(card, id("beta")), id("beta"));
    expect(twice.signatures).toHaveLength(1);
  });
});

describe("verifying a peer's card against the fleet CA", () => {
  it("round trip: a card signed by beta, read as JSON, verifies for the name 'beta'", async () => {
    const received = JSON.parse(JSON.stringify(await signCardAs(card, id("beta")))) as AgentCard;
    const signer = await verifyFleetCard(received, { ca: fleet.identity("alpha").ca, name: "beta" });
    expect(signer).toEqual({
      name: "beta",
      keyPin: keyPinOf(fleet.identity("beta").cert),
      fingerprint256: new X509Certificate(fleet.identity("beta").cert).fingerprint256,
    });
    // Without an expected name, any fleet member's signature holds, and the result names it.
    expect((await verifyFleetCard(received, { ca: fleet.identity("alpha").ca })).name).toBe("beta");
  });

  it.each([
    ["a URL", (c: AgentCard) => void (c.supportedInterfaces[0].url = "https://evil.example:9443/")],
    ["a skill", (c: AgentCard) => void c.skills.push({ id: "root-shell", name: "x", description: "x", tags: [] })],
    [
      "a member added",
      (c: AgentCard) => void ((c as unknown as Record<string, unknown>).documentationUrl = "https://evil.example"),
    ],
    [
      "a number's spelling that changes its value",
      (c: AgentCard) => void ((c as unknown as Record<string, unknown>).x = 1),
    ],
  ])("a card changed after signing (%s) is refused: bad-signature", async (_what, change) => {
    const tampered = structuredClone(await signCardAs(card, id("beta")));
    change(tampered);
    const err = await refusal(verifyFleetCard(tampered, { ca: fleet.identity("alpha").ca, name: "beta" }));
    expect(err.reason).toBe("bad-signature");
    expect(err.message).toBe(
      "its agent card signature (by 'beta') does not verify: the card was changed after it was signed",
    );
  });

  it("a card signed by another fleet member's key is refused: wrong-name", async () => {
    const byGamma = await signCardAs(card, id("gamma"));
    const err = await refusal(verifyFleetCard(byGamma, { ca: fleet.identity("alpha").ca, name: "beta" }));
    expect(err.reason).toBe("wrong-name");
    expect(err.message).toBe("its agent card is signed by fleet node 'gamma', not by 'beta'");
  });

  it("a card signed with a certificate from a foreign CA (same name) is refused: not-member", async () => {
    const foreign = await fleet.foreign("beta");
    const signed = await signCardAs(card, { certPem: foreign.cert, keyPem: foreign.key });
    const err = await refusal(verifyFleetCard(signed, { ca: fleet.identity("alpha").ca, name: "beta" }));
    expect(err.reason).toBe("not-member");
    expect(err.message).toMatch(
      /^its agent card is signed by a certificate that is not a fleet member's: it was not issued by the fleet CA itself/,
    );
  });

  it("x5c naming beta's certificate but signed by another key is refused: bad-signature", async () => {
    const leaf = new X509Certificate(fleet.identity("beta").cert);
    const forged = await signAgentCard(card, {
      privateKey: await importPrivateKeyPem(fleet.identity("gamma").key),
      chain: [new Uint8Array(leaf.raw)],
      kid: keyPinOf(leaf),
    });
    expect((await refusal(verifyFleetCard(forged, { ca: fleet.identity("alpha").ca, name: "beta" }))).reason).toBe(
      "bad-signature",
    );
  });

  it("a revoked or expired signer is refused: not-member", async () => {
    const serial = new X509Certificate(fleet.identity("beta").cert).serialNumber.replace(/^0+/, "");
    const signed = await signCardAs(card, id("beta"));
    const revoked = await refusal(
      verifyFleetCard(signed, {
        ca: fleet.identity("alpha").ca,
        name: "beta",
        revoked: (s) => (s === serial ? new Date(0) : undefined),
      }),
    );
    expect(revoked.message).toMatch(/was revoked on 1970-01-01/);
    const old = await craftCert(fleet.ca(), {
      subject: [{ CN: ["beta"] }],
      notBefore: new Date(Date.now() - 10 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    const expired = await refusal(
      verifyFleetCard(await signCardAs(card, old), { ca: fleet.identity("alpha").ca, name: "beta" }),
    );
    expect(expired.reason).toBe("not-member");
    expect(expired.message).toMatch(/^its agent card is signed by a certificate valid only from /);
  });

  it.each([
    ["no signatures", (c: AgentCard) => delete c.signatures, "unsigned", "its agent card is not signed"],
    ["an empty list", (c: AgentCard) => void (c.signatures = []), "unsigned", "its agent card is not signed"],
    [
      "a protected header that is not JSON",
      (c: AgentCard) => void (c.signatures![0].protected = "bm90IGpzb24"),
      "malformed",
      "its agent card signature has no readable protected header",
    ],
    [
      "another algorithm",
      (c: AgentCard) =>
        void (c.signatures![0].protected = Buffer.from(
          JSON.stringify({ ...readSignatureHeader(c.signatures![0]), alg: "none" }),
        ).toString("base64url")),
      "malformed",
      'its agent card is signed with "none", not ES256 (the fleet\'s ECDSA P-256 keys)',
    ],
    [
      "no x5c",
      (c: AgentCard) =>
        void (c.signatures![0].protected = Buffer.from(JSON.stringify({ alg: "ES256", kid: "k" })).toString(
          "base64url",
        )),
      "malformed",
      "its agent card signature names no certificate (x5c) to check against the fleet CA",
    ],
    [
      "a DER signature instead of r||s",
      (c: AgentCard) => void (c.signatures![0].signature = Buffer.alloc(70, 1).toString("base64url")),
      "bad-signature",
      "does not verify",
    ],
  ])("refuses a card with %s (%s)", async (_what, change, reason, message) => {
    const c = structuredClone(await signCardAs(card, id("beta")));
    change(c);
    const err = await refusal(verifyFleetCard(c, { ca: fleet.identity("alpha").ca, name: "beta" }));
    expect(err.reason).toBe(reason);
    expect(err.message).toContain(message);
  });

  it("one good signature among bad ones is enough", async () => {
    const good = await signCardAs(card, id("beta"));
    const byGamma = await signCardAs(card, id("gamma"));
    const both = { ...good, signatures: [byGamma.signatures![0], good.signatures![0]] };
    expect((await verifyFleetCard(both, { ca: fleet.identity("alpha").ca, name: "beta" })).name).toBe("beta");
  });
});

describe("withoutEmptyMembers (what a card signature leaves out)", () => {
  it('drops "", null, [] and {} at every depth, and what becomes empty by that; keeps false, 0 and other values', () => {
    expect(
      withoutEmptyMembers({
        a: "",
        b: null,
        c: [],
        d: {},
        e: { f: { g: [] } },
        h: [{}, "", 0, false, "x"],
        i: { j: 1 },
      }),
    ).toEqual({ h: [0, false, "x"], i: { j: 1 } });
    expect(withoutEmptyMembers({ a: [""] })).toBeUndefined();
    expect(withoutEmptyMembers("text")).toBe("text");
  });
});
