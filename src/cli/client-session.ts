import { existsSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfigFile, resolveSettings } from "../config";
import { loadNodeIdentity } from "../../pki/identity";
import { readRevocationList } from "../../pki/crl-reader";
import type { RevocationLookup } from "../../pki/fleet-member";
import { readPublic } from "../../pki/secure-file";
import type { FetchFn, PeerClient } from "../client/peer-client";
import {
  ConnectionFailure,
  explainFailure,
  explainProbe,
  isConnectionError,
  resolveTarget,
  type OwnCertificate,
  type Target,
} from "../client/connect";
import { CardTrustError, verifyFleetCard } from "../client/card-trust";
import {
  expectationOf,
  mtlsFetch,
  PeerIdentityError,
  type AcceptedPeer,
  type ClientTls,
  type Expectation,
} from "../client/mtls-fetch";
import { clientForCard, type GrpcTransport } from "../client/peer-interface";
import { GrpcPeerClient } from "../client/grpc-client";
import { mtlsSession, type SessionOpener } from "../client/mtls-session";
import { traced, UNTRACED, type CallTracing } from "../client/call-tracing";
import { extensionsFetch } from "../client/extensions-fetch";
import { PeerUrlError } from "../client/peer-url";
import { WrongPortError } from "../client/wrong-port";
import { DEFAULT_PEER_TIMEOUTS, PeerTimeoutError, peerTimeouts, type PeerTimeouts } from "../client/deadlines";
import { peerTimeoutFlags } from "./peer-timeouts";
import { isOutsideFailure, outsideFetch } from "../client/outside-fetch";
import { probePeer } from "../client/probe";
import { isOutsidePeer, type Peer, type PeerTrust } from "../peers/peer-registry";
import { giveToHomeOwner, homePaths } from "../home";
import type { AgentCard } from "../protocol/types";
import { openDatabase, type OpenDatabase } from "../store/database";
import { SqlitePeerRegistry } from "../store/sqlite-peer-registry";
import { CliError, ExitCode, UsageError } from "./errors";
import type { Io } from "./io";
import type { CommandTrace } from "./command-trace";

/** Opens the home's database (creating it if new) and its peer registry, for commands that manage peers. */
export function openPeers(home: string): { peers: SqlitePeerRegistry; close(): void } {
  const paths = homePaths(home);
  if (!existsSync(paths.root))
    throw new CliError(
      `no a2a-node home at ${home}`,
      ExitCode.NotFound,
      "run 'a2a-node init-pki --name NAME' first, or pass --home",
    );
  const database: OpenDatabase = openDatabase(paths.database);
  giveToHomeOwner(paths.root, [paths.database, `${paths.database}-wal`, `${paths.database}-shm`]);
  return { peers: new SqlitePeerRegistry(database.db), close: () => database.close() };
}

/** This node's identity as a client presents it, and as a refusal names it. */
export interface ClientIdentity {
  tls: ClientTls;
  own: OwnCertificate;
  /** The fleet's revocation list this home holds, if any: a revoked server is refused before anything is sent. */
  revoked?: RevocationLookup;
}

export async function loadClientIdentity(home: string): Promise<ClientIdentity> {
  const paths = homePaths(home);
  const id = await loadNodeIdentity(paths);
  const list = existsSync(paths.crl) ? readRevocationList(readPublic(paths.crl), id.caPem, paths.crl) : undefined;
  return {
    tls: { cert: id.certPem, key: id.keyPem, ca: id.caPem },
    own: { path: paths.nodeCert, name: id.name, fingerprint: id.fingerprint256, notAfter: id.notAfter },
    revoked: list && ((serial) => list.revoked.get(serial)),
  };
}

export interface ClientSession {
  client: PeerClient;
  target: Target;
  /** The peer's agent card, if it could be read when the session opened, and how long that took (ms). */
  card?: AgentCard;
  cardMs?: number;
  /** The mTLS fetch the client uses (probing on failure), for requests outside JSON-RPC. */
  fetch: FetchFn;
  /** Turns any failure of a call into a CliError with the next step. */
  fail(err: unknown): never;
  /** The identity the server proved (its fleet name, key pin), once a connection was made. */
  accepted?: AcceptedPeer;
  /** With extensions requested: the ones the peer's last answer said it activated (A2A-Extensions). */
  activatedExtensions?(): string[] | undefined;
}

/** What a client command does beyond the one identity rule, from the home's config file and environment. */
export interface ClientPolicy {
  /**
   * unsigned_cards = "accept": a fleet peer's unsigned card is used, with a warning (peers older than signed cards).
   */
  acceptUnsignedCards: boolean;
  /** Where warnings and notes go (standard error); none: unsaid. */
  note?(line: string): void;
  /** The home whose peer list converts an older certificate pin to a key pin when it matches. */
  home?: string;
  /** A2A extensions to request of the peer (the A2A-Extensions header on every request). */
  extensions?: string[];
  /** How long each step of a call to the peer may take (peer_*_seconds, --peer-*-timeout). */
  timeouts?: PeerTimeouts;
  /** The command's trace: every call to the peer (its card included) is a span of it and carries it on. */
  trace?: CommandTrace;
}

/**
 * The client policy of `home`: unsigned_cards and the peer_*_seconds timeouts from its config file, the
 * environment (A2A_NODE_*) and the command's --peer-*-timeout flags (`flags`, as parsed).
 */
export function clientPolicy(
  home: string,
  io?: Pick<Io, "env" | "stderr">,
  flags: Record<string, unknown> = {},
): ClientPolicy {
  const env = io?.env ?? {};
  let config;
  try {
    config = resolveSettings(peerTimeoutFlags(flags), env, loadConfigFile(join(home, "config.toml"), false)).config;
  } catch (err) {
    if (err instanceof ConfigError && err.message.startsWith("--")) throw new UsageError(err.message);
    if (err instanceof ConfigError)
      throw new CliError(err.message, ExitCode.Usage, "fix the config file (check it with 'a2a-node serve --check')");
    throw err;
  }
  return {
    acceptUnsignedCards: config.unsignedCards === "accept",
    note: io && ((line) => io.stderr.write(`${line}\n`)),
    timeouts: peerTimeouts(config),
  };
}

/**
 * Everything `send`, `status`, `tasks` and `cancel` need: the target and a client for it; over mutual TLS with
 * this node's identity for a fleet peer, with the peer's own trust and credentials for one outside the fleet.
 * `extensions`: A2A extensions to request of the peer. `trace`: the command's trace, which every call joins.
 */
export async function openClientSession(
  home: string,
  agent: string,
  io?: Pick<Io, "env" | "stderr">,
  extensions: string[] = [],
  flags: Record<string, unknown> = {},
  trace?: CommandTrace,
): Promise<ClientSession> {
  // Without a home there is neither a peer list nor an identity: the identity's error says what makes both.
  if (!existsSync(homePaths(home).root)) await loadClientIdentity(home);
  const { peers, close } = openPeers(home);
  let target: Target | undefined;
  try {
    target = resolveTarget(agent, peers);
  } catch (err) {
    if (err instanceof PeerUrlError) throw new UsageError(`--agent: ${err.message}`);
    throw new UsageError(`--agent '${agent}' is not a valid URL`);
  } finally {
    close();
  }
  if (!target)
    throw new CliError(
      `no peer named '${agent}'`,
      ExitCode.NotFound,
      `add it with 'a2a-node peers add ${agent.toLowerCase()} https://HOST:9443', or pass a URL`,
    );
  const policy = { ...clientPolicy(home, io, flags), home, extensions, trace };
  const session = await sessionForTarget(target, () => loadClientIdentity(home), policy);
  // A URL no peer is registered at has no expected name: say which fleet member answered, and how to pin it.
  const accepted = session.accepted;
  if (!target.peer && accepted)
    policy.note?.(
      `${target.baseUrl} is fleet node '${accepted.name}' (key ${accepted.keyPin}); to check that name and key every time, add it: a2a-node peers add ${accepted.name} ${target.baseUrl} --pin`,
    );
  return session;
}

/** A session with a resolved target: an outside peer's own, or over mTLS with the identity `identity` loads. */
export async function sessionForTarget(
  target: Target,
  identity: () => Promise<ClientIdentity>,
  policy: ClientPolicy = { acceptUnsignedCards: false },
): Promise<ClientSession> {
  const peer = target.peer;
  if (peer && isOutsidePeer(peer))
    return outsideSession(target, peer, policy.extensions, policy.timeouts, callTracing(target, policy));
  return sessionFor(await identity(), target, peer ? expectationOf(peer) : {}, policy);
}

/** The CLI's exit code for a failure explained by explainFailure. */
export function exitCodeOfFailure(err: unknown, target: Target): number {
  const why = explainFailure(err, target);
  if (why.kind === "unreachable") return ExitCode.Unreachable;
  if (why.kind === "refused") return ExitCode.Refused;
  if (why.kind === "local") return ExitCode.Usage;
  if (why.kind === "timeout") return ExitCode.Timeout;
  if (why.kind === "remote" && (err as { code?: number }).code === -32001) return ExitCode.NotFound;
  return ExitCode.Failure;
}

/**
 * A session with `target`, whose certificate must meet `expect` (the one identity rule, mtls-fetch.ts). A call
 * that gets no HTTP answer is followed by a probe of the connection, so the error says which step failed
 * (nothing listening, not TLS, their certificate, ours) instead of the runtime's one word for all of them.
 *
 * The peer's agent card is read first, and used (its interfaces, its skills) only once its signature is
 * checked against the fleet CA and the name the connection proved (card-trust.ts). With `home`, a peer's
 * older certificate pin that matched is converted to a key pin in the peer list.
 */
export async function sessionFor(
  identity: ClientIdentity,
  target: Target,
  expect: Expectation,
  policy: ClientPolicy = { acceptUnsignedCards: false },
): Promise<ClientSession> {
  const peer = target.peer;
  const timeouts = policy.timeouts ?? DEFAULT_PEER_TIMEOUTS;
  const hooks = {
    certPinMatched: (accepted: AcceptedPeer) => {
      if (!peer || !policy.home || peer.keyPin) return; // nothing to convert, or converted by an earlier connection
      const { peers, close } = openPeers(policy.home);
      try {
        peers.pinKey(peer.name, accepted.keyPin);
      } finally {
        close();
      }
      peer.keyPin = accepted.keyPin;
      delete peer.fingerprint;
      policy.note?.(
        `note: peer '${peer.name}' was pinned by one certificate (renewal replaces it); now its key is pinned instead: ${accepted.keyPin}`,
      );
    },
  };
  const raw = mtlsFetch(identity.tls, expect, identity.revoked, hooks, timeouts);
  const h2 = mtlsSession(identity.tls, expect, identity.revoked, hooks, timeouts);
  /** A failure with no answer at all is followed by a probe of `url`'s port, which says which step failed. */
  const probed = async (err: unknown, url: string, signal?: AbortSignal | null): Promise<unknown> => {
    if (!isConnectionError(err) || signal?.aborted) return err;
    const explained = explainProbe(
      await probePeer(new URL(new URL(url).origin), identity.tls, timeouts),
      target,
      identity.own,
    );
    return explained ?? err;
  };
  const fetchFn: FetchFn = async (url, init) => {
    try {
      return await raw(url, init);
    } catch (err) {
      throw await probed(err, target.baseUrl, init.signal);
    }
  };
  const open: SessionOpener = async (origin) => {
    try {
      return await h2(origin);
    } catch (err) {
      throw await probed(err, origin);
    }
  };
  return withCard(
    target,
    fetchFn,
    {
      trust: (card) => trustedCard(card, target, identity, raw.accepted()?.name ?? expect.name, policy),
      accepted: () => raw.accepted() ?? h2.accepted(),
      grpc: { open, timeouts },
    },
    policy.extensions,
    callTracing(target, policy),
  );
}

/** The calls to `target` as spans of the command's trace, naming the peer; untraced without a trace. */
function callTracing(target: Target, policy: ClientPolicy): CallTracing {
  return policy.trace?.calls({ name: target.peer?.name, url: target.baseUrl }) ?? UNTRACED;
}

/**
 * A session with an agent outside the fleet: its server is checked against the system's CA store or its own
 * CA file, and its credentials are read from their file at each request. No probe follows a failure: the
 * probe judges fleet certificates, which such an agent does not have.
 */
function outsideSession(
  target: Target,
  peer: Peer,
  extensions?: string[],
  timeouts?: PeerTimeouts,
  tracing?: CallTracing,
): Promise<ClientSession> {
  return withCard(
    target,
    outsideFetch({ trust: peer.trust as Exclude<PeerTrust, { kind: "fleet" }>, auth: peer.auth }, timeouts),
    undefined,
    extensions,
    tracing,
  );
}

/**
 * Reads the card with `fetchFn`, has `fleet.trust` check it (a fleet peer's signature; an outside peer's card
 * is trusted as far as its TLS server check goes), then picks the client for the interface it prefers (gRPC
 * only for a fleet peer: an agent outside the fleet is reached with its own credentials, over fetch). Every
 * request names `extensions` in its A2A-Extensions header (gRPC: metadata), if any, and is a span of `tracing`.
 */
async function withCard(
  target: Target,
  baseFetch: FetchFn,
  fleet?: {
    trust(card: AgentCard): Promise<AgentCard>;
    accepted(): AcceptedPeer | undefined;
    grpc: Omit<GrpcTransport, "extensions">;
  },
  extensions: string[] = [],
  tracing: CallTracing = UNTRACED,
): Promise<ClientSession> {
  const requesting = extensions.length ? extensionsFetch(baseFetch, extensions) : undefined;
  const fetchFn = requesting?.fetch ?? baseFetch;
  const fail = (err: unknown): never => {
    if (err instanceof CliError) throw err; // already worded for a person
    const why = explainFailure(err, target);
    throw new CliError(why.message, exitCodeOfFailure(err, target), why.hint);
  };
  // Speak what the peer's card lists first of what we speak: JSON-RPC, HTTP+JSON or gRPC at v1.0, or JSON-RPC
  // v0.3 to a peer that only knows it. A card we cannot read is no reason to stop: JSON-RPC v1.0 it is, and
  // the call itself will say what is wrong.
  let card: AgentCard | undefined;
  const started = performance.now();
  try {
    card = await traced(tracing, { method: "GetAgentCard", rpcSystem: "http" }, async (trace) => {
      const res = await fetchFn(new URL("/.well-known/agent-card.json", target.baseUrl).toString(), {
        headers: { ...trace, accept: "application/json", "a2a-version": "1.0" },
      });
      return res.ok ? ((await res.json()) as AgentCard) : undefined;
    });
  } catch (err) {
    if (
      err instanceof PeerIdentityError ||
      err instanceof ConnectionFailure ||
      err instanceof WrongPortError ||
      err instanceof PeerTimeoutError ||
      isOutsideFailure(err) ||
      (err as { code?: string }).code
    )
      fail(err);
  }
  const cardMs = card ? performance.now() - started : undefined;
  if (card && fleet) card = await fleet.trust(card);
  const client = clientForCard(card, target, fetchFn, fleet && { ...fleet.grpc, extensions }, tracing);
  return {
    client,
    target,
    card,
    cardMs,
    fetch: fetchFn,
    fail,
    accepted: fleet?.accepted(),
    activatedExtensions: client instanceof GrpcPeerClient ? () => client.activatedExtensions() : requesting?.activated,
  };
}

/**
 * The card if its signature holds (card-trust.ts); an unsigned card only when the policy accepts those, with a
 * warning. Anything else ends the session before the card's URLs or skills are used.
 */
async function trustedCard(
  card: AgentCard,
  target: Target,
  identity: ClientIdentity,
  name: string | undefined,
  policy: ClientPolicy,
): Promise<AgentCard> {
  const where = target.peer ? `${target.label} at ${target.baseUrl}` : target.baseUrl;
  try {
    await verifyFleetCard(card, { ca: identity.tls.ca, revoked: identity.revoked, name });
    return card;
  } catch (err) {
    if (!(err instanceof CardTrustError)) throw err;
    if (err.reason === "unsigned" && policy.acceptUnsignedCards) {
      policy.note?.(`warning: ${where}: ${err.message}; used anyway (unsigned_cards = "accept")`);
      return card;
    }
    throw new CliError(
      `${where} is not trusted: ${err.message}`,
      ExitCode.Refused,
      err.reason === "unsigned"
        ? 'upgrade a2a-node there (it signs its card since this version), or accept unsigned cards from older peers: unsigned_cards = "accept" in config.toml (or A2A_NODE_UNSIGNED_CARDS=accept)'
        : err.reason === "wrong-name"
          ? "that node serves a card another node signed: it is misconfigured or impersonating; check it with 'a2a-node pki show' there"
          : "the card was altered on the way or at the node: check that node ('a2a-node pki show', its logs) before using it",
    );
  }
}
