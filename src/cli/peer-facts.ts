import { fetchAgentCard } from "../client/peer-client";
import { explainProbe, type Target } from "../client/connect";
import { probePeer, type ServerCertificate } from "../client/probe";
import type { AgentCard } from "../protocol/types";
import { sessionFor, type ClientIdentity, type ClientPolicy } from "./client-session";
import { CliError, ExitCode } from "./errors";

/** What `peers discover` and `peers add --pin` learn about a node before pinning it. */
export interface PeerFacts {
  /** The CN of its certificate: the name it is known by in the fleet. */
  name: string;
  url: string;
  certificate: ServerCertificate;
  card: AgentCard;
}

/**
 * Connects to `url` with this node's identity, checks that the server's certificate is a fleet member's (and,
 * with `expectName`, that it is that node's), then reads its agent card over a connection that must present
 * the very key seen, and checks the card's signature: what is shown to the person is what gets pinned.
 */
export async function fetchPeerFacts(
  identity: ClientIdentity,
  url: string,
  expectName: string | undefined,
  policy: ClientPolicy,
): Promise<PeerFacts> {
  const base = new URL(url);
  const target: Target = {
    label: base.origin,
    baseUrl: base.origin,
    rpcUrl: new URL(base.pathname || "/", base).toString(),
  };
  const probe = await probePeer(base, identity.tls, policy.timeouts);
  if (probe.kind !== "ok") {
    const failure = explainProbe(probe, target, identity.own);
    if (failure)
      throw new CliError(
        failure.message,
        failure.kind === "refused" ? ExitCode.Refused : ExitCode.Unreachable,
        failure.hint,
      );
  }
  if (probe.kind !== "ok") throw new CliError(`cannot read the certificate of ${base.origin}`, ExitCode.Unreachable);
  const { certificate } = probe;
  const name = certificate.name ?? "";
  if (expectName !== undefined && name !== expectName)
    throw new CliError(
      `the node at ${base.origin} is fleet node '${name}', not '${expectName}' (the name its fleet certificate carries)`,
      ExitCode.Refused,
      `add it under its own name ('a2a-node peers add ${name} ${url} --pin'), or check the URL of ${expectName}`,
    );
  const session = await sessionFor(
    identity,
    { ...target, label: `node '${name}' at ${base.origin}` },
    { name, keyPin: certificate.keyPin },
    policy,
  );
  let card = session.card;
  if (!card) {
    try {
      card = await fetchAgentCard(session.fetch, base.origin);
    } catch (err) {
      return session.fail(err);
    }
  }
  return { name, url, certificate, card };
}

/** The facts as a person checks them against `a2a-node pki show` on that machine. */
export function describeFacts(f: PeerFacts): string {
  const versions = [...new Set((f.card.supportedInterfaces ?? []).map((i) => i.protocolVersion))].join(", ");
  const skills = (f.card.skills ?? [])
    .map((s) => (s.name && s.name !== s.id ? `${s.id} (${s.name})` : s.id))
    .join(", ");
  const rows: [string, string][] = [
    ["node", f.name],
    ["url", f.url],
    ["version", `${f.card.version}${versions ? ` (A2A ${versions})` : ""}`],
    ["about", f.card.description],
    ["skills", skills || "(none listed)"],
    ["key pin", f.certificate.keyPin],
    ["fingerprint", `${f.certificate.fingerprint} (this certificate; renewal replaces it)`],
    ["expires", f.certificate.notAfter],
    ["issued by", `${f.certificate.issuer ?? "?"}, our fleet CA`],
  ];
  return `${rows.map(([k, v]) => `  ${k.padEnd(12)} ${v}`).join("\n")}\n`;
}
