import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile, resolveSettings } from "../../../config";
import { expectationOf, mtlsFetch } from "../../../client/mtls-fetch";
import { RenewalError, renewIdentity } from "../../../fleet/renewal";
import { tellRunningServe } from "../../tell-serve";
import { CRL_PATH } from "../../../fleet/crl-sync";
import { supersedeInUse } from "../../../../pki/supersede";
import { homePaths } from "../../../home";
import { readRevocationList } from "../../../../pki/crl-reader";
import { loadNodeIdentity } from "../../../../pki/identity";
import { keyPinOf } from "../../../../pki/key-pin";
import { readPublic } from "../../../../pki/secure-file";
import type { Peer } from "../../../peers/peer-registry";
import { clientPolicy, openPeers } from "../../client-session";
import { PEER_TIMEOUT_FLAGS } from "../../peer-timeouts";
import { caPaths, caUnlock } from "../../ca-unlock";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { expiresIn, utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  "ca-peer": { type: "string", value: "PEER" },
  rekey: { type: "boolean" },
  json: { type: "boolean" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const renew: Subcommand = {
  name: "renew",
  usage: "pki renew [--ca-peer PEER] [--rekey] [--json]",
  flags: flags,
  summary: `renew this node's certificate for the same name, SANs and key (so other nodes' key pins of
            it stay valid): from the CA node over mutual TLS (ca_peer), or from this home's CA. --rekey
            makes a new key here instead, and says how the pins elsewhere are updated. The old files
            stay until the new ones are in place; a running serve on this home is told to use them
            (SIGHUP). The old certificate is then revoked (superseded: the new one is in use), so a name
            never holds more than two valid certificates. serve renews (keeping the key) by itself at two
            thirds of the lifetime, and the CA node revokes the old one once serve presents the new one`,
  flagHelp: `  --ca-peer PEER      the registered peer that holds the fleet CA (default: ca_peer from the config
                      file or A2A_NODE_CA_PEER)
  --rekey             make a new key (after a suspected key leak, say): every machine that pinned this
                      node must pin it again ('a2a-node peers add NAME URL --pin --replace' there)
  --peer-connect-timeout S, --peer-handshake-timeout S, --peer-answer-timeout S, --peer-stream-idle S
                      how long each step of the call to the CA node may take (see 'a2a-node send --help')`,
  examples: `  # renew this node's certificate from the CA node (serve does it by itself when ca_peer is set)
  a2a-node pki renew --ca-peer alpha`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const paths = homePaths(ctx.home);
    // On the CA's own home an expired certificate is what renew is for; elsewhere the CA node would refuse it.
    const current = await loadNodeIdentity(paths, { allowExpired: existsSync(paths.caKey) });
    let peer: Peer | undefined;
    if (!current.hasCaKey) {
      const caPeer =
        f["ca-peer"] ??
        resolveSettings({}, ctx.io.env, loadConfigFile(join(ctx.home, "config.toml"), false)).config.caPeer;
      if (!caPeer)
        throw new UsageError(
          "this home does not hold the fleet CA: pass --ca-peer PEER (or set ca_peer in the config file)",
        );
      const { peers, close } = openPeers(ctx.home);
      try {
        peer = peers.get(caPeer);
      } finally {
        close();
      }
      if (!peer)
        throw new CliError(
          `no peer named '${caPeer}'`,
          ExitCode.NotFound,
          `add the CA node: a2a-node peers add ${caPeer} https://HOST:9443`,
        );
    }
    const list = existsSync(paths.crl)
      ? readRevocationList(readPublic(paths.crl), current.caPem, paths.crl)
      : undefined;
    let fresh;
    try {
      fresh = await renewIdentity(
        { ...paths, unlock: caUnlock(ctx) },
        current,
        {
          peer,
          fetchFor: (p) =>
            mtlsFetch(
              { cert: current.certPem, key: current.keyPem, ca: current.caPem },
              expectationOf(p),
              list && ((s) => list.revoked.get(s)),
              {},
              clientPolicy(ctx.home, ctx.io, f).timeouts,
            ),
        },
        { rekey: f.rekey },
      );
    } catch (err) {
      if (err instanceof RenewalError)
        throw new CliError(
          err.message,
          /cannot reach/.test(err.message) ? ExitCode.Unreachable : ExitCode.Failure,
          err.hint,
        );
      throw err;
    }
    const keyPin = keyPinOf(fresh.certPem);
    const rekeyed = keyPin !== keyPinOf(current.certPem);
    const repin = `a2a-node peers add ${fresh.name} ${advertised(ctx.home, ctx.io.env) ?? "URL"} --pin --replace`;
    const told = tellRunningServe(ctx.home);
    const pid = told.told ? told.pid : undefined;
    // The new certificate is the one in use from now on (the serve here, if any, was told to take it): the old
    // one is superseded now. A serve that could not be told still serves the old one, which then stays valid.
    const superseded =
      told.pid !== undefined && !told.told
        ? `still valid: the serve here (PID ${told.pid}) could not be told (${told.error}); send it SIGHUP, and the old one is revoked once it uses the new one`
        : await supersedeNow(caPaths(ctx), fresh, peer);
    if (f.json) {
      ctx.io.stdout.write(
        JSON.stringify({
          name: fresh.name,
          serial: fresh.serialNumber,
          fingerprint256: fresh.fingerprint256,
          keyPin,
          rekeyed,
          repin: rekeyed ? repin : null,
          sans: fresh.sans,
          notAfter: fresh.notAfter,
          previous: { serial: current.serialNumber, notAfter: current.notAfter, superseded },
          reloadedPid: pid ?? null,
        }) + "\n",
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
        `  previous     serial ${current.serialNumber}, valid until ${utc(current.notAfter)}: ${superseded}`,
        pid !== undefined
          ? `told the running serve (PID ${pid}) to use it (SIGHUP)`
          : "no serve is running on this home; the next one uses it",
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

/**
 * The old certificate is superseded now: on the CA home, in its registry; elsewhere by presenting the new one
 * to the CA node (a GET /pki/crl, on which the CA node revokes what a certificate in use renewed). Says what
 * happened, for the command's output; a failure leaves the old one valid until the serve or the next renewal
 * presents the new one, and is said so.
 */
async function supersedeNow(
  paths: ReturnType<typeof caPaths>,
  fresh: Awaited<ReturnType<typeof loadNodeIdentity>>,
  peer: Peer | undefined,
): Promise<string> {
  try {
    if (fresh.hasCaKey) {
      const gone = await supersedeInUse(paths, fresh.fingerprint256);
      return gone.length ? "revoked now (superseded by the new one, in use from now on)" : "already revoked or expired";
    }
    if (!peer) return "still valid (no CA node to tell)";
    const res = await mtlsFetch({ cert: fresh.certPem, key: fresh.keyPem, ca: fresh.caPem }, expectationOf(peer))(
      new URL(CRL_PATH, peer.url).toString(),
      { signal: AbortSignal.timeout(15_000) },
    );
    await res.arrayBuffer();
    return res.ok || res.status === 404
      ? `revoked now by peer '${peer.name}' (superseded: it saw the new one in use)`
      : `still valid: peer '${peer.name}' answered HTTP ${res.status}; the next renewal revokes it`;
  } catch (err) {
    return `still valid: could not tell the CA that the new one is in use (${(err as Error).message}); the next renewal revokes it`;
  }
}
