import { createPrivateKey, X509Certificate } from "node:crypto";
import { keyPinOf } from "../../pki/key-pin";
import { signAgentCard } from "../protocol/card-signature";
import type { AgentCard } from "../protocol/types";

/**
 * This node's card signed with its own key (the key of its fleet certificate), the certificate in the
 * signature's x5c so a peer can check it against the fleet CA and the name it connected to
 * (src/client/card-trust.ts). The key is imported for signing only and cannot be exported again. Built on
 * node:crypto and WebCrypto, not the certificate library, so the daemon does not load that at start.
 */
export async function signCardAs(card: AgentCard, identity: { certPem: string; keyPem: string }): Promise<AgentCard> {
  const leaf = new X509Certificate(identity.certPem);
  const pkcs8 = createPrivateKey(identity.keyPem).export({ type: "pkcs8", format: "der" });
  const privateKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  return signAgentCard(card, { privateKey, chain: [new Uint8Array(leaf.raw)], kid: keyPinOf(leaf) });
}
