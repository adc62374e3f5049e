import { PeerExistsError } from "../../../store/sqlite-peer-registry";
import type { CommandContext, Subcommand } from "../../command";
import { peerName, peerUrl } from "../../peer-input";
import { isKeyPin } from "../../../../pki/key-pin";
import { clientPolicy, loadClientIdentity, openPeers } from "../../client-session";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { fetchPeerFacts } from "../../peer-facts";
import { isOutsidePeer, type Peer } from "../../../peers/peer-registry";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../../peer-timeouts";
import { describeReach, outsidePeer, wantsOutside } from "./outside";
import { pinText } from "./pin-text";

const FINGERPRINT = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/i;

const FLAGS = {
  "key-pin": { type: "string", value: "PIN" },
  fingerprint: { type: "string", value: "SHA256" },
  pin: { type: "boolean" },
  replace: { type: "boolean" },
  auth: { type: "string", value: "KIND", choices: ["bearer", "header", "none"] },
  "token-file": { type: "string", value: "FILE" },
  "header-file": { type: "string", value: "FILE" },
  ca: { type: "string", value: "FILE" },
  "insecure-http": { type: "boolean" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

async function addPeer(args: string[], ctx: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, FLAGS);
  const [typedName, typedUrl, ...extra] = positionals;
  if (!typedName || !typedUrl || extra.length) throw new UsageError("peers add needs NAME and URL");
  if ([flags.pin, flags["key-pin"], flags.fingerprint].filter((f) => f !== undefined && f !== false).length > 1)
    throw new UsageError("--pin, --key-pin and --fingerprint do not go together (--pin reads the key from the peer)");
  if (flags["key-pin"] !== undefined && !isKeyPin(flags["key-pin"]))
    throw new UsageError(
      "--key-pin must be a key pin like spki:sha256:... (43 base64url characters), as 'a2a-node pki show' prints it on the peer",
    );
  if (flags.fingerprint && !FINGERPRINT.test(flags.fingerprint))
    throw new UsageError("--fingerprint must be a SHA-256 fingerprint like AB:CD:... (32 bytes)");
  const outside = wantsOutside(flags);
  if (outside && (flags.pin || flags["key-pin"] || flags.fingerprint))
    throw new UsageError(
      "--pin, --key-pin and --fingerprint are for fleet peers; a peer outside the fleet is verified by its CA (the system's, or --ca FILE)",
    );
  const name = peerName(typedName, ctx);
  let toAdd: Omit<Peer, "addedAt">;
  if (outside) toAdd = outsidePeer(name, typedUrl, flags, ctx);
  else {
    const url = peerUrl(typedUrl, ctx);
    const fingerprint = flags.fingerprint?.toUpperCase();
    let keyPin = flags["key-pin"];
    if (flags.pin)
      keyPin = (
        await fetchPeerFacts(await loadClientIdentity(ctx.home), url, name, {
          ...clientPolicy(ctx.home, ctx.io, flags),
          home: ctx.home,
        })
      ).certificate.keyPin;
    if (fingerprint)
      ctx.io.stderr.write(
        "note: --fingerprint pins one certificate, which the peer's next renewal replaces; --pin or --key-pin pins its key, which renewals keep\n",
      );
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
    if (err instanceof PeerExistsError)
      throw new CliError(err.message, ExitCode.Failure, `pass --replace to point '${name}' at ${url}`);
    throw err;
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const add: Subcommand = {
  name: "add",
  usage: `peers add NAME URL [--pin | --key-pin PIN] [--replace] [--json]
peers add NAME URL --auth bearer --token-file FILE [--ca FILE] [--insecure-http] [--replace] [--json]
peers add NAME URL --header-file FILE | --auth none  [--ca FILE] [--insecure-http] [--replace] [--json]`,
  summary: `register NAME at URL. NAME is lower-cased (certificates carry lower-case names); a URL without a
             port means the node default 9443 (not HTTPS's 443), and a bare HOST[:PORT] means https://;
             both are said when filled in. --pin connects first: the node there must hold a fleet
             certificate for NAME and serve a card it signed, and its public key is pinned
             An outside peer's URL is taken as the agent publishes it (a missing port is the scheme's own,
             a path is kept); plain http:// only to a loopback host, or anywhere with --insecure-http`,
  flags: FLAGS,
  flagHelp: `  --pin                  connect to the peer and pin its public key
  --key-pin PIN          pin this key (spki:sha256:... as 'a2a-node pki show' prints it on the peer)
  --fingerprint SHA256   pin one certificate (AA:BB:...), as before key pins: the peer's next renewal
                         breaks it unless the peer is contacted first (the pin then becomes a key pin)
  --replace              overwrite an existing peer of that name
  --auth KIND            a peer outside the fleet, with credentials of KIND: bearer (sent as
                         'Authorization: Bearer TOKEN'), header (any one header), or none
  --token-file FILE      the file holding the bearer token (one line; keep it mode 0600); implies
                         --auth bearer
  --header-file FILE     the file holding one 'Name: value' header line; implies --auth header
  --ca FILE              verify the outside peer's server against this CA certificate (PEM) instead of
                         the system's CA store
  --insecure-http        allow plain http:// to a host that is not loopback (credentials then cross
                         the network in clear); http:// to 127.0.0.0/8, ::1 or localhost needs no flag
  (with --pin: how long each step of the call to the peer may take)
${PEER_TIMEOUT_HELP}`,
  examples: `  a2a-node peers add beta https://10.0.0.7:9443 --pin
  a2a-node peers add beta https://10.0.0.7:9443 --key-pin spki:sha256:3q2-7w...
  a2a-node peers add helper https://agent.example.com/a2a --auth bearer --token-file ~/.config/helper.token
  a2a-node peers add lab https://lab.internal:8443 --header-file lab.header --ca lab-ca.pem`,
  run: addPeer,
};
