import { existsSync } from "node:fs";
import { loadNodeIdentity } from "../../pki/identity";
import { readRevocationList } from "../../pki/crl-reader";
import type { RevocationLookup } from "../../pki/fleet-member";
import { readPublic } from "../../pki/secure-file";
import type { FetchFn, PeerClient } from "../client/a2a-client";
import { ConnectionFailure, explainFailure, explainProbe, isConnectionError, resolveTarget, type OwnCertificate, type Target } from "../client/connect";
import { mtlsFetch, PeerIdentityError, type ClientTls, type Expectation } from "../client/mtls-fetch";
import { clientForCard } from "../client/peer-interface";
import { extensionsFetch } from "../client/extensions-fetch";
import { PeerUrlError } from "../client/peer-url";
import { probePeer } from "../client/probe";
import { giveToHomeOwner, homePaths } from "../home";
import type { AgentCard } from "../protocol/types";
import { openDatabase, type OpenDatabase } from "../store/database";
import { SqlitePeerRegistry } from "../store/sqlite-peer-registry";
import { CliError, ExitCode, UsageError } from "./errors";

/** Opens the home's database (creating it if new) and its peer registry, for commands that manage peers. */
export function openPeers(home: string): { peers: SqlitePeerRegistry; close(): void } {
  const paths = homePaths(home);
  if (!existsSync(paths.root))
    throw new CliError(`no a2a-node home at ${home}`, ExitCode.NotFound, "run 'a2a-node init-pki --name NAME' first, or pass --home");
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
  /** With extensions requested: the ones the peer's last answer said it activated (A2A-Extensions). */
  activatedExtensions?(): string[] | undefined;
}

/** Everything `send`, `status`, `tasks` and `cancel` need: this node's identity, the target, an mTLS client. */
export async function openClientSession(home: string, agent: string, extensions: string[] = []): Promise<ClientSession> {
  const identity = await loadClientIdentity(home);
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
    throw new CliError(`no peer named '${agent}'`, ExitCode.NotFound, `add it with 'a2a-node peers add ${agent.toLowerCase()} https://HOST:9443', or pass a URL`);
  return sessionFor(identity, target, { name: target.peer?.name, fingerprint: target.peer?.fingerprint }, extensions);
}

/** The CLI's exit code for a failure explained by explainFailure. */
export function exitCodeOfFailure(err: unknown, target: Target): number {
  const why = explainFailure(err, target);
  if (why.kind === "unreachable") return ExitCode.Unreachable;
  if (why.kind === "refused") return ExitCode.Refused;
  if (why.kind === "remote" && (err as { code?: number }).code === -32001) return ExitCode.NotFound;
  return ExitCode.Failure;
}

/**
 * A session with `target`, whose certificate must meet `expect`. A call that gets no HTTP answer is followed
 * by a probe of the connection, so the error says which step failed (nothing listening, not TLS, their
 * certificate, ours) instead of the runtime's one word for all of them.
 */
export async function sessionFor(identity: ClientIdentity, target: Target, expect: Expectation, extensions: string[] = []): Promise<ClientSession> {
  const raw = mtlsFetch(identity.tls, expect, identity.revoked);
  const probed: FetchFn = async (url, init) => {
    try {
      return await raw(url, init);
    } catch (err) {
      if (!isConnectionError(err) || init.signal?.aborted) throw err;
      const explained = explainProbe(await probePeer(new URL(target.baseUrl), identity.tls), target, identity.own);
      throw explained ?? err;
    }
  };
  const requesting = extensions.length ? extensionsFetch(probed, extensions) : undefined;
  const fetchFn = requesting?.fetch ?? probed;
  const fail = (err: unknown): never => {
    if (err instanceof CliError) throw err; // already worded for a person
    const why = explainFailure(err, target);
    throw new CliError(why.message, exitCodeOfFailure(err, target), why.hint);
  };
  // Speak what the peer's card lists first of what we speak: JSON-RPC or HTTP+JSON at v1.0, or JSON-RPC
  // v0.3 to a peer that only knows it. A card we cannot read is no reason to stop: JSON-RPC v1.0 it is, and
  // the call itself will say what is wrong.
  let card: AgentCard | undefined;
  const started = performance.now();
  try {
    const res = await fetchFn(new URL("/.well-known/agent-card.json", target.baseUrl).toString(), { headers: { accept: "application/json", "a2a-version": "1.0" } });
    if (res.ok) card = (await res.json()) as AgentCard;
  } catch (err) {
    if (err instanceof PeerIdentityError || err instanceof ConnectionFailure || (err as { code?: string }).code) fail(err);
  }
  const cardMs = card ? performance.now() - started : undefined;
  return { client: clientForCard(card, target, fetchFn), target, card, cardMs, fetch: fetchFn, fail, activatedExtensions: requesting?.activated };
}
