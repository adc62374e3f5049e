import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile, resolveSettings } from "../../../config";
import { expectationOf, mtlsFetch } from "../../../client/mtls-fetch";
import { RenewalError, renewIdentity } from "../../../fleet/renewal";
import { homeLockHolder } from "../../../home-lock";
import { homePaths } from "../../../home";
import { readRevocationList } from "../../../../pki/crl-reader";
import { loadNodeIdentity } from "../../../../pki/identity";
import { keyPinOf } from "../../../../pki/key-pin";
import { readPublic } from "../../../../pki/secure-file";
import type { Peer } from "../../../peers/peer-registry";
import { clientPolicy, openPeers } from "../../client-session";
import { PEER_TIMEOUT_FLAGS } from "../../peer-timeouts";
import { caUnlock } from "../../ca-unlock";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { expiresIn, utc } from "./text";
import type { PkiSubcommand } from "./subcommand";

const flags = {
  "ca-peer": { type: "string", value: "PEER" },
  rekey: { type: "boolean" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const renew: PkiSubcommand = {
  name: "renew",
  usage: "pki renew [--ca-peer PEER] [--rekey] [--json]",
  flagSpec: flags,
  summary: `renew this node's certificate for the same name, SANs and key (so other nodes' key pins of
            it stay valid): from the CA node over mutual TLS (ca_peer), or from this home's CA. --rekey
            makes a new key here instead, and says how the pins elsewhere are updated. The old files
            stay until the new ones are in place; a running serve on this home is told to use them
            (SIGHUP). serve renews (keeping the key) by itself at two thirds of the lifetime`,
  flagHelp: `  --ca-peer PEER      the registered peer that holds the fleet CA (default: ca_peer from the config
                      file or A2A_NODE_CA_PEER)
  --rekey             make a new key (after a suspected key leak, say): every machine that pinned this
                      node must pin it again ('a2a-node peers add NAME URL --pin --replace' there)
  --peer-connect-timeout S, --peer-handshake-timeout S, --peer-answer-timeout S, --peer-stream-idle S
                      how long each step of the call to the CA node may take (see 'a2a-node send --help')`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const paths = homePaths(ctx.home);
    // On the CA's own home an expired certificate is what renew is for; elsewhere the CA node would refuse it.
    const current = await loadNodeIdentity(paths, { allowExpired: existsSync(paths.caKey) });
    let peer: Peer | undefined;
    if (!current.hasCaKey) {
      const caPeer = f["ca-peer"] ?? resolveSettings({}, ctx.io.env, loadConfigFile(join(ctx.home, "config.toml"), false)).config.caPeer;
      if (!caPeer) throw new UsageError("this home does not hold the fleet CA: pass --ca-peer PEER (or set ca_peer in the config file)");
      const { peers, close } = openPeers(ctx.home);
      try {
        peer = peers.get(caPeer);
      } finally {
        close();
      }
      if (!peer) throw new CliError(`no peer named '${caPeer}'`, ExitCode.NotFound, `add the CA node: a2a-node peers add ${caPeer} https://HOST:9443`);
    }
    const list = existsSync(paths.crl) ? readRevocationList(readPublic(paths.crl), current.caPem, paths.crl) : undefined;
    let fresh;
    try {
      fresh = await renewIdentity({ ...paths, unlock: caUnlock(ctx) }, current, {
        peer,
        fetchFor: (p) => mtlsFetch({ cert: current.certPem, key: current.keyPem, ca: current.caPem }, expectationOf(p), list && ((s) => list.revoked.get(s)), {}, clientPolicy(ctx.home, ctx.io, f).timeouts),
      }, { rekey: f.rekey });
    } catch (err) {
      if (err instanceof RenewalError) throw new CliError(err.message, /cannot reach/.test(err.message) ? ExitCode.Unreachable : ExitCode.Failure, err.hint);
      throw err;
    }
    const keyPin = keyPinOf(fresh.certPem);
    const rekeyed = keyPin !== keyPinOf(current.certPem);
    const repin = `a2a-node peers add ${fresh.name} ${advertised(ctx.home, ctx.io.env) ?? "URL"} --pin --replace`;
    const pid = homeLockHolder(ctx.home);
    if (pid !== undefined) process.kill(pid, "SIGHUP");
    if (f.json) {
      ctx.io.stdout.write(
        JSON.stringify({ name: fresh.name, serial: fresh.serialNumber, fingerprint256: fresh.fingerprint256, keyPin, rekeyed, repin: rekeyed ? repin : null, sans: fresh.sans, notAfter: fresh.notAfter, previous: { serial: current.serialNumber, notAfter: current.notAfter }, reloadedPid: pid ?? null }) + "\n",
      );
      return 0;
    }
    ctx.io.stdout.write(
      [
        `renewed "${fresh.name}"${peer ? ` from peer '${peer.name}'` : " from this home's fleet CA"}`,
        `  SANs         ${fresh.sans.join(", ")}`,
        `  serial       ${fresh.serialNumber}`,
        `  fingerprint  ${fresh.fingerprint256}`,
        rekeyed ? `  key          NEW ${keyPin}` : `  key          kept ${keyPin} (key pins of this node stay valid)`,
        `  expires      ${expiresIn(fresh.notAfter)}`,
        `  previous     serial ${current.serialNumber}, valid until ${utc(current.notAfter)} (not revoked: it runs out by itself)`,
        pid !== undefined ? `told the running serve (PID ${pid}) to use it (SIGHUP)` : "no serve is running on this home; the next one uses it",
        ...(rekeyed
          ? [
              `the key changed: machines that pinned "${fresh.name}" now refuse it until they pin it again. On each of them run`,
              `  ${repin}`,
              `(or 'a2a-node peers add ${fresh.name} URL --key-pin ${keyPin} --replace', having checked the pin here)`,
            ]
          : []),
      ].join("\n") + "\n",
    );
    return 0;
  },
};

/** This node's advertise_url, if the config file or environment sets one (the URL other machines pin it at). */
function advertised(home: string, env: Record<string, string | undefined>): string | undefined {
  try {
    return resolveSettings({}, env, loadConfigFile(join(home, "config.toml"), false)).config.advertiseUrl;
  } catch {
    return undefined;
  }
}
