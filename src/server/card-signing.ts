import { createPrivateKey, X509Certificate } from "node:crypto";
import { keyPinOf } from "../../pki/key-pin";
import { signAgentCard } from "../protocol/card-signature";
import type { AgentCard } from "../protocol/types";
import type { ServeConfig } from "../config";
import { buildAgentCard, buildExtendedCard, DEFAULT_SKILLS, type Binding } from "./agent-card";

/**
 * This node's card signed with its own key (the key of its fleet certificate), the certificate in the
 * signature's x5c so a peer can check it against the fleet CA and the name it connected to
 * (src/client/card-trust.ts). The key is imported for signing only and cannot be exported again. Built on
 * node:crypto and WebCrypto, not the certificate library, so the daemon does not load that at start.
 */
export async function signCardAs(card: AgentCard, identity: { certPem: string; keyPem: string }): Promise<AgentCard> {
  const leaf = new X509Certificate(identity.certPem);
  const pkcs8 = createPrivateKey(identity.keyPem).export({ type: "pkcs8", format: "der" });
  const privateKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
  ]);
  return signAgentCard(card, { privateKey, chain: [new Uint8Array(leaf.raw)], kid: keyPinOf(leaf) });
}

/** Who may call on a listener, and so which card it serves: fleet members, token callers, or anyone local. */
export type CardAudience = "mtls" | "bearer" | "anonymous";

/** The settings a card is made of (read at each build, so a reload that changed them shows on the next card). */
export type CardSettings = Pick<
  ServeConfig,
  "description" | "skills" | "preferredBinding" | "extendedCard" | "extensions"
>;

/**
 * The node's cards, signed with its key and kept until the identity changes: one per listener URL and audience
 * ("mtls": fleet members, who get the extended card too; "bearer": token callers; "anonymous": the plain
 * loopback listener, no identity), and the extended card for fleet members.
 */
export class SignedCards {
  private readonly cards = new Map<string, Promise<AgentCard>>();
  private signedAs: { certPem: string; keyPem: string; name: string } | undefined;

  constructor(
    private readonly identity: () => { certPem: string; keyPem: string; name: string },
    private readonly settings: CardSettings,
    private readonly version: string,
  ) {}

  /** The public card served at `url` to this audience. */
  card(url: string, audience: CardAudience = "mtls"): Promise<AgentCard> {
    return this.signed(audience, url);
  }

  /** The extended card, for fleet members (only asked for when extended_card is set). */
  extended(url: string): Promise<AgentCard> {
    return this.signed("extended", url);
  }

  private signed(kind: CardAudience | "extended", url: string): Promise<AgentCard> {
    const identity = this.identity();
    if (this.signedAs !== identity) {
      this.cards.clear();
      this.signedAs = identity;
    }
    const key = `${kind} ${url}`;
    let c = this.cards.get(key);
    if (!c) {
      const unsigned =
        kind === "extended"
          ? buildExtendedCard(this.unsigned(url, "mtls"), this.settings.extendedCard!)
          : this.unsigned(url, kind);
      c = signCardAs(unsigned, identity);
      this.cards.set(key, c);
    }
    return c;
  }

  private unsigned(url: string, audience: CardAudience): AgentCard {
    const s = this.settings;
    return buildAgentCard({
      name: this.signedAs!.name,
      description: s.description,
      version: this.version,
      advertisedUrl: url,
      skills: s.skills ?? DEFAULT_SKILLS,
      pushNotifications: true,
      preferredBinding: s.preferredBinding as Binding,
      security: audience === "bearer" ? "bearer" : "mtls",
      // The token listener speaks HTTP/1.1 only (see listeners.ts); the other two serve gRPC too.
      grpc: audience !== "bearer",
      // Only fleet members (mutual TLS) are shown the extended card.
      extendedAgentCard: s.extendedCard !== undefined && audience === "mtls",
      extensions: s.extensions,
    });
  }
}
