/**
 * Card signatures between @a2a-js/sdk (1.3) and us, both ways. The SDK signs what it canonicalises: the card
 * through its protobuf types, empty members dropped, then sorted keys; we drop empty members too, then RFC 8785
 * (card-signature.ts). Our own card lists the mutual-TLS requirement with an empty scope list: the SDK's
 * verifier must still accept our signature of it, and a change of a member that is not empty must still fail.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { generateAgentCardSignature, verifyAgentCardSignature } from "@a2a-js/sdk";
import { keyPinOf } from "../../pki";
import { verifyFleetCard } from "../../src/client/card-trust";
import type { AgentCard } from "../../src/protocol/types";
import { buildAgentCard, DEFAULT_SKILLS } from "../../src/server/agent-card";
import { signCardAs } from "../../src/server/card-signing";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let card: AgentCard;
beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  card = buildAgentCard({
    name: "beta",
    description: "beta's agent",
    version: "1.0.0",
    advertisedUrl: "https://10.0.0.7:9443",
    skills: DEFAULT_SKILLS,
    pushNotifications: true,
  });
});
afterAll(() => fleet?.cleanup());

const leaf = () => new X509Certificate(fleet.identity("beta").cert);
// WebCrypto keys: the SDK's JOSE library takes them as they are (jose itself is only the SDK's dependency).
const P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
const publicKey = () =>
  crypto.subtle.importKey("spki", leaf().publicKey.export({ type: "spki", format: "der" }), P256, true, ["verify"]);
/** The SDK's verifier, given beta's key for beta's kid (as a client with the key already in hand would). */
const sdkVerify = async (c: AgentCard) => {
  const key = await publicKey();
  const kid = keyPinOf(leaf());
  const quiet = console.debug;
  console.debug = () => {}; // it logs each failed entry
  try {
    await verifyAgentCardSignature(async (k) => (k === kid ? key : Promise.reject(new Error(`unknown kid ${k}`))))(
      c as never,
    );
    return "verified";
  } catch (err) {
    return (err as Error).message;
  } finally {
    console.debug = quiet;
  }
};

describe("card signatures with @a2a-js/sdk", () => {
  it("we verify a card the SDK signed with a fleet key and the x5c header", async () => {
    const { securityRequirements: _none, ...plain } = card;
    const privateKey = await crypto.subtle.importKey(
      "pkcs8",
      createPrivateKey(fleet.identity("beta").key).export({ type: "pkcs8", format: "der" }),
      P256,
      false,
      ["sign"],
    );
    const header = { alg: "ES256", typ: "JOSE", kid: keyPinOf(leaf()), x5c: [leaf().raw.toString("base64")] };
    const signed = JSON.parse(
      JSON.stringify(await generateAgentCardSignature(privateKey, header as never)(plain as never)),
    ) as AgentCard;
    expect(await verifyFleetCard(signed, { ca: fleet.identity("alpha").ca, name: "beta" })).toMatchObject({
      name: "beta",
      keyPin: keyPinOf(leaf()),
    });
  });

  it("the SDK verifies our signature of a card without empty members", async () => {
    const { securityRequirements: _none, ...plain } = card;
    expect(
      await sdkVerify(
        JSON.parse(
          JSON.stringify(
            await signCardAs(plain as AgentCard, {
              certPem: fleet.identity("beta").cert,
              keyPem: fleet.identity("beta").key,
            }),
          ),
        ),
      ),
    ).toBe("verified");
  });

  it("the SDK verifies our signature of our own card, empty mutual-TLS scope list and all", async () => {
    expect(card.securityRequirements).toEqual([{ schemes: { mtls: { list: [] } } }]);
    const ours = JSON.parse(
      JSON.stringify(
        await signCardAs(card, { certPem: fleet.identity("beta").cert, keyPem: fleet.identity("beta").key }),
      ),
    ) as AgentCard;
    expect(await sdkVerify(ours)).toBe("verified");
    expect(await verifyFleetCard(ours, { ca: fleet.identity("alpha").ca, name: "beta" })).toMatchObject({
      name: "beta",
    });
    // What the signature covers still counts, for the SDK and for us: a changed URL fails both.
    const moved = {
      ...ours,
      supportedInterfaces: ours.supportedInterfaces.map((i) => ({ ...i, url: i.url.replace("10.0.0.7", "10.6.6.6") })),
    };
    expect(await sdkVerify(moved)).toBe("No valid signatures found on agent card.");
    await expect(verifyFleetCard(moved, { ca: fleet.identity("alpha").ca, name: "beta" })).rejects.toThrow();
  });
});
