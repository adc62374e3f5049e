import type { AgentCard } from "../../protocol/types";
import type { CommandContext } from "../command";
import { clientPolicy, loadClientIdentity, openClientSession, openPeers } from "../client-session";
import { pinText } from "./peers-flags";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { describeFacts, fetchPeerFacts } from "../peer-facts";
import { peerUrl } from "../peer-input";
import { PEERS_FLAGS } from "./peers-flags";

/** `peers discover URL`: show who serves there, then pin it (asking first on a terminal). */
export async function discoverPeer(args: string[], ctx: CommandContext): Promise<number> {
  const { io, home } = ctx;
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.discover);
  if (positionals.length !== 1) throw new UsageError("peers discover needs exactly one URL (https://HOST:PORT)");
  const url = peerUrl(positionals[0], ctx);
  const facts = await fetchPeerFacts(await loadClientIdentity(home), url, undefined, { ...clientPolicy(home, io, flags), home });
  const keyPin = facts.certificate.keyPin;
  const { peers, close } = openPeers(home);
  try {
    const before = peers.get(facts.name);
    const same = before?.url === url && before.keyPin === keyPin;
    const change = !before
      ? `adds peer '${facts.name}'`
      : same
        ? `peer '${facts.name}' is already pinned to this key at this URL`
        : `updates peer '${facts.name}' (now ${before.url}, ${pinText(before)})`;
    const json = (pinned: boolean) => `${JSON.stringify({ ...facts, pinned, changed: pinned && !same })}\n`;
    if (!flags.json) io.stdout.write(`${describeFacts(facts)}  ${"pinning".padEnd(12)} ${change}\n`);
    if (same) {
      if (flags.json) io.stdout.write(json(true));
      return ExitCode.Ok;
    }
    if (!flags.yes) {
      if (!io.tty?.stdin || !io.readLine) {
        if (flags.json) io.stdout.write(json(false));
        throw new UsageError("nothing pinned: standard input is not a terminal to confirm on; check the key pin against 'a2a-node pki show' on that machine, then pass --yes");
      }
      io.stderr.write(`pin '${facts.name}' at ${url} with key ${keyPin}? [y/N] `);
      const answer = ((await io.readLine()) ?? "").trim().toLowerCase();
      if (answer !== "y" && answer !== "yes") {
        if (flags.json) io.stdout.write(json(false));
        throw new CliError("nothing pinned", ExitCode.Failure, `pin it later with 'a2a-node peers discover ${url}'`);
      }
    }
    peers.add({ name: facts.name, url, keyPin }, { replace: true });
    io.stdout.write(flags.json ? json(true) : `pinned peer ${facts.name} at ${url} (key ${keyPin})\n`);
    return ExitCode.Ok;
  } finally {
    close();
  }
}

/** `peers ping NAME`: the round trip of reading the agent card, and the version the peer runs. */
export async function pingPeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.ping);
  if (positionals.length !== 1) throw new UsageError("peers ping needs exactly one NAME (or URL)");
  const session = await openClientSession(home, positionals[0], io, [], flags);
  const firstMs = session.cardMs ?? 0;
  const cardUrl = new URL("/.well-known/agent-card.json", session.target.baseUrl).toString();
  const t0 = performance.now();
  let card: AgentCard;
  try {
    const res = await session.fetch(cardUrl, { headers: { accept: "application/json", "a2a-version": "1.0" } });
    if (!res.ok) throw new CliError(`${session.target.label} answered HTTP ${res.status} for its agent card`, ExitCode.Failure, "is that URL an a2a-node?");
    card = (await res.json()) as AgentCard;
  } catch (err) {
    if (err instanceof CliError) throw err;
    return session.fail(err);
  }
  const ms = performance.now() - t0;
  const protocols = [...new Set((card.supportedInterfaces ?? []).map((i) => i.protocolVersion))];
  const round = (n: number) => Math.round(n * 10) / 10;
  if (flags.json)
    io.stdout.write(`${JSON.stringify({ peer: session.target.peer?.name ?? null, url: session.target.baseUrl, ms: round(ms), firstMs: round(firstMs), name: card.name, version: card.version, protocolVersions: protocols })}\n`);
  else
    io.stdout.write(
      `${session.target.label} (${session.target.baseUrl}) answered in ${round(ms)} ms (${round(firstMs)} ms for the first request, TLS handshake included); ` +
        `'${card.name}' runs version ${card.version}${protocols.length ? `, A2A ${protocols.join(", ")}` : ""}\n`,
    );
  return ExitCode.Ok;
}
