import { existsSync } from "node:fs";
import { loadNodeIdentity } from "../../pki/identity";
import type { PeerClient } from "../client/a2a-client";
import { explainFailure, resolveTarget, type Target } from "../client/connect";
import { mtlsFetch, PeerIdentityError } from "../client/mtls-fetch";
import { clientForCard } from "../client/peer-interface";
import { giveToHomeOwner, homePaths } from "../home";
import { openDatabase, type OpenDatabase } from "../store/database";
import { SqlitePeerRegistry } from "../store/sqlite-peer-registry";
import { CliError, ExitCode } from "./errors";

/** Opens the home's database (creating it if new) and its peer registry, for commands that manage peers. */
export function openPeers(home: string): { peers: SqlitePeerRegistry; close(): void } {
  const paths = homePaths(home);
  if (!existsSync(paths.root))
    throw new CliError(`no a2a-node home at ${home}`, ExitCode.NotFound, "run 'a2a-node init-pki --name NAME' first, or pass --home");
  const database: OpenDatabase = openDatabase(paths.database);
  giveToHomeOwner(paths.root, [paths.database, `${paths.database}-wal`, `${paths.database}-shm`]);
  return { peers: new SqlitePeerRegistry(database.db), close: () => database.close() };
}

export interface ClientSession {
  client: PeerClient;
  target: Target;
  /** Turns any failure of a call into a CliError with the next step. */
  fail(err: unknown): never;
}

/** Everything `send` and `status` need: this node's identity, the target, and an mTLS client for it. */
export async function openClientSession(home: string, agent: string): Promise<ClientSession> {
  const identity = await loadNodeIdentity(homePaths(home));
  const { peers, close } = openPeers(home);
  let target: Target | undefined;
  try {
    target = resolveTarget(agent, peers);
  } catch {
    throw new CliError(`--agent '${agent}' is not a valid URL`, ExitCode.Usage);
  } finally {
    close();
  }
  if (!target)
    throw new CliError(`no peer named '${agent}'`, ExitCode.NotFound, `add it with 'a2a-node peers add ${agent} https://HOST:9443', or pass a URL`);
  const fetchFn = mtlsFetch(
    { cert: identity.certPem, key: identity.keyPem, ca: identity.caPem },
    { name: target.peer?.name, fingerprint: target.peer?.fingerprint },
  );
  const t = target;
  const fail = (err: unknown): never => {
    const why = explainFailure(err, t);
    const notFound = why.kind === "remote" && (err as { code?: number }).code === -32001;
    const code = why.kind === "unreachable" || why.kind === "refused" ? ExitCode.Unreachable : notFound ? ExitCode.NotFound : ExitCode.Failure;
    throw new CliError(why.message, code, why.hint);
  };
  // Speak what the peer's card lists first of what we speak: JSON-RPC or HTTP+JSON at v1.0, or JSON-RPC
  // v0.3 to a peer that only knows it. A card we cannot read is no reason to stop: JSON-RPC v1.0 it is, and
  // the call itself will say what is wrong.
  let card: unknown;
  try {
    const res = await fetchFn(new URL("/.well-known/agent-card.json", t.baseUrl).toString(), { headers: { accept: "application/json", "a2a-version": "1.0" } });
    if (res.ok) card = await res.json();
  } catch (err) {
    if (err instanceof PeerIdentityError || (err as { code?: string }).code) fail(err);
  }
  return { client: clientForCard(card, t, fetchFn), target: t, fail };
}
