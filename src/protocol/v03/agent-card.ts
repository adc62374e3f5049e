import { A2AError } from "../errors";
import { isObj } from "../field-checks";
import type { AgentCard } from "../types";
import type { Metadata, V03AgentCard } from "./shapes";
import { compact, nonEmpty, nonEmptyList } from "./wire-checks";

/* The v0.3 agent card, made from the v1.0 one. */

export const V03_PROTOCOL_VERSION = "0.3.0";

function toV03SecurityScheme(s: unknown): Metadata | undefined {
  if (!isObj(s)) return undefined;
  const [kind, body] = Object.entries(s)[0] ?? [];
  if (!isObj(body)) return undefined;
  const description = typeof body.description === "string" && body.description ? { description: body.description } : {};
  switch (kind) {
    case "mtlsSecurityScheme":
      return { type: "mutualTLS", ...description };
    case "apiKeySecurityScheme":
      return {
        type: "apiKey",
        name: body.name,
        in: body.location === "cookie" || body.location === "query" ? body.location : "header",
        ...description,
      };
    case "httpAuthSecurityScheme":
      return compact({
        type: "http",
        scheme: body.scheme,
        bearerFormat: nonEmpty(body.bearerFormat as string | undefined),
        ...description,
      });
    case "oauth2SecurityScheme":
      return compact({
        type: "oauth2",
        flows: body.flows ?? {},
        oauth2MetadataUrl: nonEmpty(body.oauth2MetadataUrl as string | undefined),
        ...description,
      });
    case "openIdConnectSecurityScheme":
      return { type: "openIdConnect", openIdConnectUrl: body.openIdConnectUrl, ...description };
    default:
      return undefined;
  }
}

/** The v1.0 card as a v0.3 AgentCard: `url` + `preferredTransport` from the JSON-RPC interface. */
export function toV03AgentCard(card: AgentCard): V03AgentCard {
  const interfaces = card.supportedInterfaces ?? [];
  const primary = interfaces.find((i) => i.protocolBinding === "JSONRPC") ?? interfaces[0];
  if (!primary) throw A2AError.internal("the agent card has no interface to advertise");
  const out: V03AgentCard = {
    name: card.name,
    description: card.description,
    version: card.version,
    protocolVersion: V03_PROTOCOL_VERSION,
    url: primary.url,
    preferredTransport: primary.protocolBinding,
    additionalInterfaces: interfaces.map((i) => ({ url: i.url, transport: i.protocolBinding })),
    capabilities: compact({
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      extensions: nonEmptyList(card.capabilities.extensions),
    }),
    defaultInputModes: [...card.defaultInputModes],
    defaultOutputModes: [...card.defaultOutputModes],
    skills: card.skills.map((s) =>
      compact({
        id: s.id,
        name: s.name,
        description: s.description,
        tags: [...s.tags],
        examples: nonEmptyList(s.examples),
        inputModes: nonEmptyList(s.inputModes),
        outputModes: nonEmptyList(s.outputModes),
      }),
    ),
  };
  if (card.provider) out.provider = { organization: card.provider.organization, url: card.provider.url };
  if (nonEmpty(card.documentationUrl)) out.documentationUrl = card.documentationUrl;
  if (card.capabilities.extendedAgentCard !== undefined)
    out.supportsAuthenticatedExtendedCard = card.capabilities.extendedAgentCard;
  if (card.securitySchemes) {
    const schemes: Record<string, Metadata> = {};
    for (const [name, s] of Object.entries(card.securitySchemes)) {
      const v = toV03SecurityScheme(s);
      if (v) schemes[name] = v;
    }
    if (Object.keys(schemes).length > 0) out.securitySchemes = schemes;
  }
  if (card.securityRequirements && card.securityRequirements.length > 0) {
    out.security = card.securityRequirements.map((r) => {
      const schemes = isObj(r) && isObj(r.schemes) ? r.schemes : {};
      return Object.fromEntries(
        Object.entries(schemes).map(([name, v]) => [name, isObj(v) && Array.isArray(v.list) ? v.list.map(String) : []]),
      );
    });
  }
  return out;
}
