import type { AgentCard, AgentExtension, AgentInterface, AgentSkill } from "../protocol/types";
import { CURRENT_PROTOCOL_VERSION } from "../protocol/types";
import { JSONRPC_PATH } from "./request-router";

export interface CardOptions {
  name: string;
  description: string;
  version: string;
  /** Base URL peers reach this node at, e.g. https://beta:9443 (must be covered by the certificate). */
  advertisedUrl: string;
  skills: AgentSkill[];
  pushNotifications?: boolean;
  /** The binding listed first in supportedInterfaces, which clients take when they speak both. */
  preferredBinding?: Binding;
  /**
   * Whether this listener serves the gRPC binding (the mutual-TLS one by ALPN h2, the plain loopback one by
   * h2c); the token listener does not.
   */
  grpc?: boolean;
  /** How callers prove who they are on the listener serving this card: mutual TLS (default), or a bearer token. */
  security?: "mtls" | "bearer";
  /** Whether GetExtendedAgentCard gives callers of this listener more (capabilities.extendedAgentCard). */
  extendedAgentCard?: boolean;
  /** The A2A extensions declared in capabilities.extensions. */
  extensions?: AgentExtension[];
}

export type Binding = "JSONRPC" | "HTTP+JSON" | "GRPC";

/** The bindings in the order a card lists them when none is preferred. */
const BINDING_ORDER: Binding[] = ["JSONRPC", "HTTP+JSON", "GRPC"];

export const DEFAULT_SKILLS: AgentSkill[] = [
  {
    id: "delegate",
    name: "Delegated task",
    description: "Takes a task in plain text and answers with its result as an artifact.",
    tags: ["delegation", "general"],
    examples: ["Summarise the attached notes in three bullet points."],
  },
];

const MTLS_SECURITY: Pick<AgentCard, "securitySchemes" | "securityRequirements"> = {
  securitySchemes: {
    mtls: {
      mtlsSecurityScheme: {
        description: "Mutual TLS: present a client certificate issued by this fleet's CA; its CN is your identity.",
      },
    },
  },
  securityRequirements: [{ schemes: { mtls: { list: [] } } }],
};

/** The token listener's card (token_port): HTTP authentication, scheme Bearer (spec §4.5 HTTPAuthSecurityScheme). */
const BEARER_SECURITY: Pick<AgentCard, "securitySchemes" | "securityRequirements"> = {
  securitySchemes: {
    bearer: {
      httpAuthSecurityScheme: {
        scheme: "Bearer",
        description:
          "Authorization: Bearer TOKEN, a token this node's operator made with 'a2a-node tokens add NAME'; NAME is your identity.",
      },
    },
  },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }],
};

/**
 * The A2A v1.0 agent card. It declares mutual TLS as the only way in: every route of the node, this card
 * included, needs a certificate from the fleet CA. The bindings are served on the same listener (gRPC by
 * HTTP/2 on the same port), with the same security (one scheme for the whole card); the preferred one comes
 * first, the others after it in their usual order.
 */
export function buildAgentCard(o: CardOptions): AgentCard {
  const root = new URL(JSONRPC_PATH, o.advertisedUrl).toString();
  const url: Record<Binding, string> = {
    JSONRPC: root,
    // The HTTP+JSON routes (/message:send, /tasks/{id}, ...) are joined to this base: no trailing slash.
    "HTTP+JSON": root.replace(/\/+$/, ""),
    // host:port, no scheme: gRPC clients (@a2a-js/sdk, the conformance kit) dial the URL as given, TLS or h2c.
    GRPC: new URL(o.advertisedUrl).host,
  };
  const served = BINDING_ORDER.filter((b) => b !== "GRPC" || o.grpc);
  const preferred = o.preferredBinding && served.includes(o.preferredBinding) ? o.preferredBinding : served[0];
  const interfaces: AgentInterface[] = [preferred, ...served.filter((b) => b !== preferred)].map((b) => ({
    url: url[b],
    protocolBinding: b,
    protocolVersion: CURRENT_PROTOCOL_VERSION,
  }));
  return {
    name: o.name,
    description: o.description,
    version: o.version,
    supportedInterfaces: interfaces,
    capabilities: {
      streaming: true,
      pushNotifications: o.pushNotifications ?? false,
      ...(o.extensions?.length ? { extensions: o.extensions } : {}),
      extendedAgentCard: o.extendedAgentCard ?? false,
    },
    ...(o.security === "bearer" ? BEARER_SECURITY : MTLS_SECURITY),
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: o.skills,
  };
}

/**
 * The extended card fleet members get from GetExtendedAgentCard: the public card with the [extended_card]
 * additions (its description, its skills after the public ones).
 */
export function buildExtendedCard(
  publicCard: AgentCard,
  extra: { description?: string; skills: AgentSkill[] },
): AgentCard {
  // A signature of the public card does not cover this one: it is left out (a signer signs this card itself).
  const { signatures: _signatures, ...card } = publicCard as AgentCard & { signatures?: unknown };
  return {
    ...card,
    description: extra.description ?? publicCard.description,
    capabilities: { ...publicCard.capabilities, extendedAgentCard: true },
    skills: [...publicCard.skills, ...extra.skills],
  };
}
