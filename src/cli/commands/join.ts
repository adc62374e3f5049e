import { existsSync, readFileSync } from "node:fs";
import { join as joinPath } from "node:path";
import { JoinError, join, normalizeFingerprint } from "../../fleet/join";
import { ensureHome, homePaths } from "../../home";
import { PeerExistsError } from "../../store/sqlite-peer-registry";
import { writeFileAtomic } from "../../../pki/secure-file";
import type { Command } from "../command";
import { clientPolicy, openPeers } from "../client-session";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { handPkiFilesToOwner } from "../home-files";
import { asCliError, expiresIn } from "./pki";

const flags = {
  token: { type: "string", value: "TOKEN" },
  "ca-fingerprint": { type: "string", value: "SHA256" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

const help = `USAGE
  a2a-node join https://CA-HOST:ENROLL_PORT --token TOKEN --ca-fingerprint sha256:HEX [--json]

  On the new machine. Makes this node's key here (0600, never leaves the machine), checks that the server
  at the URL holds the fleet CA whose fingerprint you were given, and sends it the token and a certificate
  request over TLS. Installs the certificate it gets and the fleet CA certificate, registers the CA node
  as a peer, and sets ca_peer in HOME/config.toml, so 'serve' fetches the revocation list and renews its
  certificate from it. The token comes from 'a2a-node pki token --name NAME' on the CA machine, which
  prints this whole command; the CA node must serve with --enroll-port.

FLAGS
  --token TOKEN            the one-time token (NAME.SECRET): this machine's name is its first part
  --ca-fingerprint SHA256  the fleet CA's SHA-256 fingerprint (sha256:hex, or AB:CD:... as 'pki show' prints it)
  --json                   print the result as one line of JSON
${PEER_TIMEOUT_HELP}
  --home DIR               node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  # on the CA machine (serving with --enroll-port 9444):
  a2a-node pki token --name beta --ttl 15m
  # on beta, the command it printed:
  a2a-node join https://alpha.lan:9444 --token beta.Qm9i... --ca-fingerprint sha256:3f2a...
  a2a-node serve

EXIT CODES
  0  joined
  1  refused: used, expired or unknown token; a key or certificate already here; ... (the message says what next)
  2  usage error
  4  the CA node is unreachable (no connection, handshake or answer in time included)
  8  the server is not the pinned fleet CA, or its TLS handshake refused us (the A2A port, not the enrollment port)
`;

export const joinCommand: Command = {
  name: "join",
  summary: "join a fleet with a one-time token from 'pki token' (the key is made here)",
  help,
  flags,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length === 0) throw new UsageError("join needs the CA node's enrollment URL (https://HOST:PORT)");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.token === undefined)
      throw new UsageError("join needs --token TOKEN (from 'a2a-node pki token' on the CA machine)");
    if (f["ca-fingerprint"] === undefined)
      throw new UsageError("join needs --ca-fingerprint sha256:HEX (printed by 'a2a-node pki token')");
    let url: URL;
    try {
      url = new URL(positionals[0]);
    } catch {
      throw new UsageError(`'${positionals[0]}' is not a URL (https://HOST:PORT)`);
    }
    // The enrollment port speaks TLS only (its server is checked against the CA fingerprint): plain http is a
    // mistake in the command, not a peer to try.
    if (url.protocol !== "https:")
      throw new UsageError(`the enrollment URL must be https://HOST:PORT (got '${positionals[0]}')`);
    try {
      normalizeFingerprint(f["ca-fingerprint"]);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const paths = ensureHome(homePaths(ctx.home));
    let r;
    try {
      r = await join(paths, {
        url: url.toString(),
        token: f.token,
        caFingerprint: f["ca-fingerprint"],
        timeouts: clientPolicy(ctx.home, ctx.io, f).timeouts,
      });
    } catch (err) {
      if (err instanceof JoinError)
        throw new CliError(
          err.message,
          err.kind === "refused" ? ExitCode.Failure : err.kind === "mismatch" ? ExitCode.Refused : ExitCode.Unreachable,
          err.hint,
        );
      throw asCliError(err);
    }
    const peer = registerCaNode(ctx.home, r.caNode);
    const config = setCaPeer(ctx.home, r.caNode.name);
    handPkiFilesToOwner(ctx.home);
    if (f.json) {
      ctx.io.stdout.write(JSON.stringify({ ...r, peer, config }) + "\n");
      return ExitCode.Ok;
    }
    ctx.io.stdout.write(
      [
        `joined the fleet as "${r.name}"${r.keyCreated ? "" : " (with the key an earlier attempt made)"}`,
        `  SANs            ${r.sans.join(", ")}`,
        `  fingerprint     ${r.fingerprint256}`,
        `  expires         ${expiresIn(r.notAfter)}`,
        `  fleet CA        ${r.caFingerprint256}`,
        peer === "added"
          ? `registered peer '${r.caNode.name}' at ${r.caNode.url}`
          : `peer '${r.caNode.name}' was already registered; left as it was`,
        config === "set"
          ? `set ca_peer = "${r.caNode.name}" in ${joinPath(ctx.home, "config.toml")}`
          : `ca_peer is already set in ${joinPath(ctx.home, "config.toml")}; left as it was`,
        "next: a2a-node serve",
      ].join("\n") + "\n",
    );
    return ExitCode.Ok;
  },
};

function registerCaNode(home: string, caNode: { name: string; url: string }): "added" | "kept" {
  const { peers, close } = openPeers(home);
  try {
    peers.add({ name: caNode.name, url: caNode.url });
    return "added";
  } catch (err) {
    if (err instanceof PeerExistsError) return "kept";
    throw err;
  } finally {
    close();
  }
}

/**
 * ca_peer in HOME/config.toml, unless the file sets it already. The line goes first: a key written after a
 * [[skills]] table would belong to that table.
 */
function setCaPeer(home: string, name: string): "set" | "kept" {
  const path = joinPath(home, "config.toml");
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  if (/^\s*ca_peer\s*=/m.test(text)) return "kept";
  writeFileAtomic(
    path,
    `ca_peer = ${JSON.stringify(name)}  # set by 'a2a-node join': the node holding the fleet CA\n${text}`,
    { mode: 0o600, overwrite: true },
  );
  return "set";
}
