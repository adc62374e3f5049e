import type { AgentCard } from "../../../protocol/types";
import type { CommandContext, Subcommand } from "../../command";
import { openClientSession } from "../../client-session";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../../peer-timeouts";

const FLAGS = { json: { type: "boolean" }, ...PEER_TIMEOUT_FLAGS } as const;

/** `peers ping NAME`: the round trip of reading the agent card, and the version the peer runs. */
async function pingPeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, FLAGS);
  if (positionals.length !== 1) throw new UsageError("peers ping needs exactly one NAME (or URL)");
  const session = await openClientSession(home, positionals[0], io, [], flags);
  const firstMs = session.cardMs ?? 0;
  const cardUrl = new URL("/.well-known/agent-card.json", session.target.baseUrl).toString();
  const t0 = performance.now();
  let card: AgentCard;
  try {
    const res = await session.fetch(cardUrl, { headers: { accept: "application/json", "a2a-version": "1.0" } });
    if (!res.ok)
      throw new CliError(
        `${session.target.label} answered HTTP ${res.status} for its agent card`,
        ExitCode.Failure,
        "is that URL an a2a-node?",
      );
    card = (await res.json()) as AgentCard;
  } catch (err) {
    if (err instanceof CliError) throw err;
    return session.fail(err);
  }
  const ms = performance.now() - t0;
  const protocols = [...new Set((card.supportedInterfaces ?? []).map((i) => i.protocolVersion))];
  const round = (n: number) => Math.round(n * 10) / 10;
  if (flags.json)
    io.stdout.write(
      `${JSON.stringify({ peer: session.target.peer?.name ?? null, url: session.target.baseUrl, ms: round(ms), firstMs: round(firstMs), name: card.name, version: card.version, protocolVersions: protocols })}\n`,
    );
  else
    io.stdout.write(
      `${session.target.label} (${session.target.baseUrl}) answered in ${round(ms)} ms (${round(firstMs)} ms for the first request, TLS handshake included); ` +
        `'${card.name}' runs version ${card.version}${protocols.length ? `, A2A ${protocols.join(", ")}` : ""}\n`,
    );
  return ExitCode.Ok;
}

export const ping: Subcommand = {
  name: "ping",
  usage: `peers ping NAME|URL [--json]`,
  summary: `read a peer's agent card: how long it takes (the first request includes the TLS handshake)
             and the version it runs`,
  flags: FLAGS,
  flagHelp: `${PEER_TIMEOUT_HELP}`,
  examples: `  a2a-node peers ping beta`,
  run: pingPeer,
};
