import type { CommandContext, Subcommand } from "../../command";
import { openPeers } from "../../client-session";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { isOutsidePeer } from "../../../peers/peer-registry";
import { pinText } from "./pin-text";

const FLAGS = { json: { type: "boolean" } } as const;

async function showPeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, FLAGS);
  if (positionals.length !== 1) throw new UsageError("peers show needs exactly one NAME");
  const { peers, close } = openPeers(home);
  try {
    const typed = positionals[0];
    const peer = peers.get(typed) ?? peers.get(typed.toLowerCase());
    if (!peer) throw new CliError(`no peer named '${typed}'`, ExitCode.NotFound, "see 'a2a-node peers list'");
    if (flags.json) io.stdout.write(`${JSON.stringify(peer)}\n`);
    else {
      const rows: [string, string][] = [
        ["name", peer.name],
        ["url", peer.url],
        [
          "server",
          !isOutsidePeer(peer)
            ? "fleet member: mutual TLS with our CA, its certificate must carry the name"
            : peer.trust?.kind === "ca"
              ? `verified against the CA in ${peer.trust.caFile}`
              : "verified against this system's CA store",
        ],
      ];
      if (peer.keyPin || peer.fingerprint) rows.push(["pinned", pinText(peer)]);
      if (isOutsidePeer(peer))
        rows.push([
          "credentials",
          peer.auth
            ? `${peer.auth.kind === "bearer" ? "Authorization: Bearer, token" : "one header,"} read from ${peer.auth.file} at every call`
            : "none",
        ]);
      if (peer.url.startsWith("http:"))
        rows.push(["plain http", peer.insecureHttp ? "allowed to another machine (--insecure-http)" : "loopback only"]);
      rows.push(["added", peer.addedAt]);
      for (const [k, v] of rows) io.stdout.write(`${k.padEnd(12)} ${v}\n`);
    }
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const show: Subcommand = {
  name: "show",
  usage: `peers show NAME [--json]`,
  summary: `one peer: URL, how its server is verified, where its credentials are read from`,
  flags: FLAGS,
  flagHelp: ``,
  examples: `  a2a-node peers show helper --json`,
  run: showPeer,
};
