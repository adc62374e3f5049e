import type { FetchFn } from "../client/peer-client";
import type { Logger } from "../log";
import type { PeerRegistry } from "../peers/peer-registry";
import type { RevocationState } from "./revocation-state";

export const CRL_PATH = "/pki/crl";

export interface CrlSyncOptions {
  state: RevocationState;
  peers: PeerRegistry;
  /** Read at every round, so SIGHUP changes apply at the next one. */
  settings(): { caPeer?: string; crlRefreshMs: number };
  /** An mTLS fetch to the named peer, as this node, refusing revoked servers. */
  fetchFor(peer: { name: string; keyPin?: string; fingerprint?: string }): FetchFn;
  /**
   * On the node that holds the fleet CA: signs a new list when the one in force is due (see FleetPki), and
   * revokes what the certificate this node now serves superseded. Absent elsewhere.
   */
  localCa?(): Promise<void>;
  log: Logger;
}

export interface CrlSync {
  /** One round now (also on SIGHUP); resolves when it is done. */
  refreshNow(): Promise<void>;
  stop(): void;
}

/**
 * Keeps the node's revocation list current: every crl_refresh_seconds it reads HOME/certs/crl.pem again (also
 * read before each connection is judged, see RevocationState), on the CA node signs a new list before the one
 * in force runs out, and when ca_peer names a registered peer it asks that peer over mutual TLS for its list
 * (GET /pki/crl). A round that fails logs a warning every time, saying how old the list in force is and
 * whether it is past its next update: the list in force stays (connections are judged against it: fail open),
 * and GET /health/ready says when it has gone stale (see FleetPki.revocationCheck).
 */
export function startCrlSync(options: CrlSyncOptions): CrlSync {
  const { state, log } = options;
  let failing = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let chain = Promise.resolve();
  let stopped = false;

  const fetchFromPeer = async (peerName: string) => {
    const peer = options.peers.get(peerName);
    if (!peer) throw new Error(`ca_peer '${peerName}' is not a registered peer (a2a-node peers add ${peerName} URL)`);
    const url = new URL(CRL_PATH, peer.url).toString();
    const res = await options.fetchFor(peer)(url, { signal: AbortSignal.timeout(15_000) });
    if (res.status === 404) {
      await res.arrayBuffer(); // the CA node has revoked nothing yet
      state.confirm();
      return;
    }
    if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}${await errorOf(res)}`);
    state.offer(await res.text(), `peer '${peer.name}'`, peer.name);
    state.confirm();
  };

  /** What the warning of a failed round says about the list in force. */
  const inForce = () => {
    const list = state.current();
    if (!list) return { list: "none" };
    const now = Date.now();
    return {
      list: list.number,
      list_age_s: Math.round((now - list.thisUpdate.getTime()) / 1000),
      next_update: list.nextUpdate?.toISOString(),
      stale: list.nextUpdate !== undefined && now > list.nextUpdate.getTime(),
    };
  };

  const round = async () => {
    state.loadFromDisk();
    if (options.localCa) {
      try {
        await options.localCa();
      } catch (err) {
        log.warn("could not sign a new revocation list; the one in force stays until its next update", {
          reason: (err as Error).message,
          ...inForce(),
        });
      }
    }
    const { caPeer } = options.settings();
    if (!caPeer) return;
    try {
      await fetchFromPeer(caPeer);
      if (failing) log.info("fetched the revocation list again", { ca_peer: caPeer, ...inForce() });
      failing = false;
    } catch (err) {
      // Every failed round says so: one line per crl_refresh_seconds, until the CA node answers again.
      log.warn("could not fetch the revocation list; the one in force stays", {
        ca_peer: caPeer,
        reason: (err as Error).message,
        ...inForce(),
      });
      failing = true;
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void refreshNow().finally(schedule), options.settings().crlRefreshMs);
    timer.unref?.();
  };
  // Rounds run one after another: a refresh asked for while one runs gets a round of its own, started after
  // it, so it sees whatever changed since (a revocation made a moment ago).
  const refreshNow = () => (chain = chain.then(round));

  void refreshNow().finally(schedule);
  return {
    refreshNow,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** The reason in an error answer's JSON body (`{"error": "..."}` or a google.rpc.Status), for the log. */
async function errorOf(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: string | { message?: string } };
    const why = typeof body.error === "string" ? body.error : body.error?.message;
    return why ? `: ${why}` : "";
  } catch {
    return "";
  }
}
