import type { AgentCard, AgentSkill } from "../protocol/types";
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
}

export const DEFAULT_SKILLS: AgentSkill[] = [
  {
    id: "delegate",
    name: "Delegated task",
    description: "Takes a task in plain text and answers with its result as an artifact.",
    tags: ["delegation", "general"],
    examples: ["Summarise the attached notes in three bullet points."],
  },
];

/**
 * The A2A v1.0 agent card. It declares mutual TLS as the only way in: every route of the node, this card
 * included, needs a certificate from the fleet CA.
 */
export function buildAgentCard(o: CardOptions): AgentCard {
  return {
    name: o.name,
    description: o.description,
    version: o.version,
    supportedInterfaces: [
      {
        url: new URL(JSONRPC_PATH, o.advertisedUrl).toString(),
        protocolBinding: "JSONRPC",
        protocolVersion: CURRENT_PROTOCOL_VERSION,
      },
    ],
    capabilities: { streaming: true, pushNotifications: o.pushNotifications ?? false, extendedAgentCard: false },
    securitySchemes: {
      mtls: {
        mtlsSecurityScheme: {
          description: "Mutual TLS: present a client certificate issued by this fleet's CA; its CN is your identity.",
        },
      },
    },
    securityRequirements: [{ schemes: { mtls: { list: [] } } }],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: o.skills,
  };
}
