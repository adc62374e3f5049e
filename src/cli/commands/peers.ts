import { PeerExistsError } from "../../store/sqlite-peer-registry";
import type { Command, CommandContext } from "../command";
import { peerName, peerUrl } from "../peer-input";
import { isKeyPin } from "../../../pki/key-pin";
import { clientPolicy, loadClientIdentity, openPeers } from "../client-session";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { fetchPeerFacts } from "../peer-facts";
import { isOutsidePeer, type Peer } from "../../peers/peer-registry";
import { PEERS_FLAGS, pinText } from "./peers-flags";
import { PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { describeReach, outsidePeer, wantsOutside } from "./peers-outside";
import { discoverPeer, pingPeer } from "./peers-remote";

const FINGERPRINT = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/i;


export const peersCommand: Command = {
  name: "peers",
  summary: "manage known peers: add, list, show, remove, discover, ping",
  help: `Manage the peers this node knows: a name (the fleet name on the peer's certificate, lower case as init-pki
issues it), the URL it serves at, and optionally a pin of its public key, which its renewals keep (a
'pki renew --rekey' there changes it). Kept in HOME/a2a-node.db. A peer is who its fleet certificate names
(it must chain to the fleet CA and carry that name), and, if pinned, must hold the pinned key.

A peer outside the fleet (an A2A agent that knows nothing of our PKI: a hosted agent, an SDK sample, Hermes'
own A2A server) is added with --auth, --token-file, --header-file, --ca or --insecure-http. Its server is
verified by host name against this system's CA store (or the CA in --ca FILE), no client certificate is
presented, and its credentials are read from their file at every call (rotate the token by rewriting the
file). Only the file's path is stored: the token never appears in the database, 'peers list/show', --json
output, logs or error messages. send, status, tasks, cancel and ping work with it as with a fleet peer.

USAGE
  a2a-node peers add NAME URL [--pin | --key-pin PIN] [--replace] [--json]
  a2a-node peers add NAME URL --auth bearer --token-file FILE [--ca FILE] [--insecure-http] [--replace] [--json]
  a2a-node peers add NAME URL --header-file FILE | --auth none  [--ca FILE] [--insecure-http] [--replace] [--json]
  a2a-node peers discover URL [--yes] [--json]
  a2a-node peers ping NAME|URL [--json]
  a2a-node peers list [--json]
  a2a-node peers show NAME [--json]
  a2a-node peers remove NAME [--json]

SUBCOMMANDS
  add        register NAME at URL. NAME is lower-cased (certificates carry lower-case names); a URL without a
             port means the node default 9443 (not HTTPS's 443), and a bare HOST[:PORT] means https://;
             both are said when filled in. --pin connects first: the node there must hold a fleet
             certificate for NAME and serve a card it signed, and its public key is pinned
             An outside peer's URL is taken as the agent publishes it (a missing port is the scheme's own,
             a path is kept); plain http:// only to a loopback host, or anywhere with --insecure-http
  discover   connect to URL, show the node's name, version, skills and key pin, then pin it
             (adding the peer, or updating the peer of that name). Asks first on a terminal; without one,
             pass --yes
  ping       read a peer's agent card: how long it takes (the first request includes the TLS handshake)
             and the version it runs
  list       the known peers, and how each is reached (never a secret)
  show       one peer: URL, how its server is verified, where its credentials are read from
  remove     forget a peer

FLAGS
  --pin                  (add) connect to the peer and pin its public key
  --key-pin PIN          (add) pin this key (spki:sha256:... as 'a2a-node pki show' prints it on the peer)
  --fingerprint SHA256   (add) pin one certificate (AA:BB:...), as before key pins: the peer's next renewal
                         breaks it unless the peer is contacted first (the pin then becomes a key pin)
  --replace              (add) overwrite an existing peer of that name
  --auth KIND            (add) a peer outside the fleet, with credentials of KIND: bearer (sent as
                         'Authorization: Bearer TOKEN'), header (any one header), or none
  --token-file FILE      (add) the file holding the bearer token (one line; keep it mode 0600); implies
                         --auth bearer
  --header-file FILE     (add) the file holding one 'Name: value' header line; implies --auth header
  --ca FILE              (add) verify the outside peer's server against this CA certificate (PEM) instead of
                         the system's CA store
  --insecure-http        (add) allow plain http:// to a host that is not loopback (credentials then cross
                         the network in clear); http:// to 127.0.0.0/8, ::1 or localhost needs no flag
  --yes                  (discover) pin without asking
  --json                 one JSON value on one line on stdout
  (add --pin, discover, ping: how long each step of the call to the peer may take)
${PEER_TIMEOUT_HELP}

EXAMPLES
  a2a-node peers add beta https://10.0.0.7:9443 --pin
  a2a-node peers add beta https://10.0.0.7:9443 --key-pin spki:sha256:3q2-7w...
  a2a-node peers add helper https://agent.example.com/a2a --auth bearer --token-file ~/.config/helper.token
  a2a-node peers add lab https://lab.internal:8443 --header-file lab.header --ca lab-ca.pem
  a2a-node peers show helper --json
  a2a-node peers discover https://10.0.0.7:9443
  a2a-node peers ping beta
  a2a-node peers list --json
  a2a-node peers remove beta

EXIT CODES
  0 success   1 failure (peer exists; not confirmed)   2 usage error (bad name or URL; discover without a
  terminal and without --yes; a token, header or CA file that cannot be read)   3 no such peer
  4 cannot connect (nothing listens, not TLS, unknown host, no connection or handshake in time)
  5 the peer did not answer in time   8 refused (TLS handshake, a certificate from
  outside the fleet, another node's name, a key that differs from the pin, an agent card that is unsigned or
  not signed by that node; an outside peer that refused the token, 401/403)
`,
  flags: {},
  subcommands: PEERS_FLAGS,
  async run(argv, ctx) {
    const [sub, ...args] = argv;
    switch (sub) {
      case "add":
        return addPeer(args, ctx);
      case "discover":
        return discoverPeer(args, ctx);
      case "ping":
        return pingPeer(args, ctx);
      case "list":
        return listPeers(args, ctx);
      case "show":
        return showPeer(args, ctx);
      case "remove":
        return removePeer(args, ctx);
      case undefined:
        throw new UsageError("peers needs a subcommand: add, list, show, remove, discover or ping");
      default:
        throw new UsageError(`unknown peers subcommand '${sub}' (add, list, show, remove, discover, ping)`);
    }
  },
};

async function addPeer(args: string[], ctx: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.add);
  const [typedName, typedUrl, ...extra] = positionals;
  if (!typedName || !typedUrl || extra.length) throw new UsageError("peers add needs NAME and URL");
  if ([flags.pin, flags["key-pin"], flags.fingerprint].filter((f) => f !== undefined && f !== false).length > 1)
    throw new UsageError("--pin, --key-pin and --fingerprint do not go together (--pin reads the key from the peer)");
  if (flags["key-pin"] !== undefined && !isKeyPin(flags["key-pin"]))
    throw new UsageError("--key-pin must be a key pin like spki:sha256:... (43 base64url characters), as 'a2a-node pki show' prints it on the peer");
  if (flags.fingerprint && !FINGERPRINT.test(flags.fingerprint)) throw new UsageError("--fingerprint must be a SHA-256 fingerprint like AB:CD:... (32 bytes)");
  const outside = wantsOutside(flags);
  if (outside && (flags.pin || flags["key-pin"] || flags.fingerprint))
    throw new UsageError("--pin, --key-pin and --fingerprint are for fleet peers; a peer outside the fleet is verified by its CA (the system's, or --ca FILE)");
  const name = peerName(typedName, ctx);
  let toAdd: Omit<Peer, "addedAt">;
  if (outside) toAdd = outsidePeer(name, typedUrl, flags, ctx);
  else {
    const url = peerUrl(typedUrl, ctx);
    const fingerprint = flags.fingerprint?.toUpperCase();
    let keyPin = flags["key-pin"];
    if (flags.pin) keyPin = (await fetchPeerFacts(await loadClientIdentity(ctx.home), url, name, { ...clientPolicy(ctx.home, ctx.io, flags), home: ctx.home })).certificate.keyPin;
    if (fingerprint) ctx.io.stderr.write("note: --fingerprint pins one certificate, which the peer's next renewal replaces; --pin or --key-pin pins its key, which renewals keep\n");
    toAdd = { name, url, keyPin, fingerprint };
  }
  const url = toAdd.url;
  const { peers, close } = openPeers(ctx.home);
  try {
    const peer = peers.add(toAdd, { replace: flags.replace });
    ctx.io.stdout.write(
      flags.json
        ? `${JSON.stringify(peer)}\n`
        : isOutsidePeer(peer)
          ? `added peer ${peer.name} at ${peer.url} (${describeReach(peer)})\n`
          : `added peer ${peer.name} at ${peer.url}${peer.keyPin || peer.fingerprint ? ` (${pinText(peer)})` : ""}\n`,
    );
  } catch (err) {
    if (err instanceof PeerExistsError) throw new CliError(err.message, ExitCode.Failure, `pass --replace to point '${name}' at ${url}`);
    throw err;
  } finally {
    close();
  }
  return ExitCode.Ok;
}

async function listPeers(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.list);
  if (positionals.length) throw new UsageError(`peers list takes no arguments (got '${positionals[0]}')`);
  const { peers, close } = openPeers(home);
  try {
    const all = peers.list();
    if (flags.json) io.stdout.write(`${JSON.stringify(all)}\n`);
    else if (all.length === 0) io.stdout.write("no peers yet: add one with 'a2a-node peers add NAME URL'\n");
    else {
      const w = Math.max(4, ...all.map((p) => p.name.length));
      const u = Math.max(3, ...all.map((p) => p.url.length));
      io.stdout.write(`${"NAME".padEnd(w)}  ${"URL".padEnd(u)}  REACHED\n`);
      for (const p of all) io.stdout.write(`${p.name.padEnd(w)}  ${p.url.padEnd(u)}  ${describeReach(p)}\n`);
    }
  } finally {
    close();
  }
  return ExitCode.Ok;
}

async function showPeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.show);
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
        ["server", !isOutsidePeer(peer) ? "fleet member: mutual TLS with our CA, its certificate must carry the name" : peer.trust?.kind === "ca" ? `verified against the CA in ${peer.trust.caFile}` : "verified against this system's CA store"],
      ];
      if (peer.keyPin || peer.fingerprint) rows.push(["pinned", pinText(peer)]);
      if (isOutsidePeer(peer))
        rows.push(["credentials", peer.auth ? `${peer.auth.kind === "bearer" ? "Authorization: Bearer, token" : "one header,"} read from ${peer.auth.file} at every call` : "none"]);
      if (peer.url.startsWith("http:")) rows.push(["plain http", peer.insecureHttp ? "allowed to another machine (--insecure-http)" : "loopback only"]);
      rows.push(["added", peer.addedAt]);
      for (const [k, v] of rows) io.stdout.write(`${k.padEnd(12)} ${v}\n`);
    }
  } finally {
    close();
  }
  return ExitCode.Ok;
}

async function removePeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, PEERS_FLAGS.remove);
  if (positionals.length !== 1) throw new UsageError("peers remove needs exactly one NAME");
  const { peers, close } = openPeers(home);
  try {
    const typed = positionals[0];
    const name = peers.get(typed) ? typed : typed.toLowerCase();
    if (!peers.remove(name)) throw new CliError(`no peer named '${typed}'`, ExitCode.NotFound, "see 'a2a-node peers list'");
    io.stdout.write(flags.json ? `${JSON.stringify({ removed: name })}\n` : `removed peer ${name}\n`);
  } finally {
    close();
  }
  return ExitCode.Ok;
}
