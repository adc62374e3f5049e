import type { CommandContext, Subcommand } from "../../command";
import { clientPolicy, loadClientIdentity, openPeers } from "../../client-session";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { describeFacts, fetchPeerFacts } from "../../peer-facts";
import { peerUrl } from "../../peer-input";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../../peer-timeouts";
import { pinText } from "./pin-text";

const FLAGS = { yes: { type: "boolean" }, json: { type: "boolean" }, ...PEER_TIMEOUT_FLAGS } as const;

/** `peers discover URL`: show who serves there, then pin it (asking first on a terminal). */
async function discoverPeer(args: string[], ctx: CommandContext): Promise<number> {
  const { io, home } = ctx;
  const { flags, positionals } = parseFlags(args, FLAGS);
  if (positionals.length !== 1) throw new UsageError("peers discover needs exactly one URL (https://HOST:PORT)");
  const url = peerUrl(positionals[0], ctx);
  const facts = await fetchPeerFacts(await loadClientIdentity(home), url, undefined, {
    ...clientPolicy(home, io, flags),
    home,
  });
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
        throw new UsageError(
          "nothing pinned: standard input is not a terminal to confirm on; check the key pin against 'a2a-node pki show' on that machine, then pass --yes",
        );
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

export const discover: Subcommand = {
  name: "discover",
  usage: `peers discover URL [--yes] [--json]`,
  summary: `connect to URL, show the node's name, version, skills and key pin, then pin it
             (adding the peer, or updating the peer of that name). Asks first on a terminal; without one,
             pass --yes`,
  flags: FLAGS,
  flagHelp: `  --yes                  pin without asking
${PEER_TIMEOUT_HELP}`,
  examples: `  a2a-node peers discover https://10.0.0.7:9443`,
  run: discoverPeer,
};
