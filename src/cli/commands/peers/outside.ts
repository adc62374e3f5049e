import { resolve } from "node:path";
import {
  PeerCaError,
  PeerCredentialsError,
  readableByOthers,
  readCredentialHeader,
  trustRoots,
} from "../../../client/outside-fetch";
import { normalizeOutsideUrl, PeerUrlError } from "../../../client/peer-url";
import type { Peer, PeerAuth, PeerTrust } from "../../../peers/peer-registry";
import type { CommandContext } from "../../command";
import { CliError, ExitCode, UsageError } from "../../errors";
import { pinText } from "./pin-text";

/** The flags of `peers add` that make a peer one outside the fleet. */
export interface OutsideFlags {
  auth?: string;
  "token-file"?: string;
  "header-file"?: string;
  ca?: string;
  "insecure-http": boolean;
}

/** Whether `peers add` was given any flag of a peer outside the fleet. */
export function wantsOutside(f: OutsideFlags): boolean {
  return (
    f.auth !== undefined ||
    f["token-file"] !== undefined ||
    f["header-file"] !== undefined ||
    f.ca !== undefined ||
    f["insecure-http"]
  );
}

/**
 * The peer `peers add NAME URL --auth ...` registers: its URL as the agent publishes it, how its server is
 * verified, and where its credentials are read from (a path, made absolute; the secret stays in the file).
 * The files are read once now so a mistake shows at once, not at the first `send`.
 */
export function outsidePeer(
  name: string,
  typedUrl: string,
  f: OutsideFlags,
  ctx: CommandContext,
): Omit<Peer, "addedAt"> {
  const kind =
    f.auth ?? (f["token-file"] !== undefined ? "bearer" : f["header-file"] !== undefined ? "header" : "none");
  if (!["bearer", "header", "none"].includes(kind))
    throw new UsageError(`--auth must be bearer, header or none (got '${f.auth}')`);
  if (f["token-file"] !== undefined && f["header-file"] !== undefined)
    throw new UsageError("--token-file and --header-file do not go together: a peer gets one credential");
  if (kind === "bearer" && f["token-file"] === undefined)
    throw new UsageError("--auth bearer needs --token-file FILE (a file holding the token)");
  if (kind === "header" && f["header-file"] === undefined)
    throw new UsageError("--auth header needs --header-file FILE (a file holding one 'Name: value' line)");
  if (kind !== "bearer" && f["token-file"] !== undefined)
    throw new UsageError(`--token-file goes with --auth bearer, not --auth ${kind}`);
  if (kind !== "header" && f["header-file"] !== undefined)
    throw new UsageError(`--header-file goes with --auth header, not --auth ${kind}`);

  let url: string;
  try {
    url = normalizeOutsideUrl(typedUrl, { insecureHttp: f["insecure-http"] }).url;
  } catch (err) {
    if (err instanceof PeerUrlError) throw new UsageError(err.message);
    throw err;
  }
  const trust: PeerTrust = f.ca !== undefined ? { kind: "ca", caFile: resolve(f.ca) } : { kind: "system" };
  const auth: PeerAuth | undefined =
    kind === "none"
      ? undefined
      : { kind: kind as PeerAuth["kind"], file: resolve((f["token-file"] ?? f["header-file"]) as string) };

  try {
    if (trust.kind === "ca") trustRoots(trust);
    if (auth) readCredentialHeader(auth);
  } catch (err) {
    if (err instanceof PeerCredentialsError || err instanceof PeerCaError)
      throw new CliError(
        err.message,
        ExitCode.Usage,
        auth && err instanceof PeerCredentialsError
          ? `write it first (mode 0600), then add the peer again`
          : "give the agent's CA certificate as a PEM file",
      );
    throw err;
  }
  if (auth && readableByOthers(auth.file))
    ctx.io.stderr.write(`warning: ${auth.file} can be read by other users; 'chmod 600 ${auth.file}'\n`);
  if (url.startsWith("http:"))
    ctx.io.stderr.write(
      `note: ${url} is plain HTTP: ${auth ? "the credentials cross" : "requests cross"} ${f["insecure-http"] ? "the network" : "this machine's loopback"} unencrypted\n`,
    );
  const peer: Omit<Peer, "addedAt"> = { name, url, trust };
  if (auth) peer.auth = auth;
  if (f["insecure-http"]) peer.insecureHttp = true;
  return peer;
}

/** How a peer is reached, in a few words for `peers list` and `peers show` (never the secret, only its file). */
export function describeReach(p: Peer): string {
  if (!p.trust || p.trust.kind === "fleet") return p.keyPin || p.fingerprint ? `fleet, ${pinText(p)}` : "fleet";
  const server = p.url.startsWith("http:")
    ? "plain HTTP"
    : p.trust.kind === "ca"
      ? `CA ${p.trust.caFile}`
      : "system CAs";
  const creds = p.auth
    ? `${p.auth.kind === "bearer" ? "bearer token" : "header"} from ${p.auth.file}`
    : "no credentials";
  return `outside, ${server}, ${creds}`;
}
