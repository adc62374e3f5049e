import type { FetchFn } from "../client/a2a-client";
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
  log: Logger;
}

export interface CrlSync {
  /** One round now (also on SIGHUP); resolves when it is done. */
  refreshNow(): Promise<void>;
  stop(): void;
}

/**
 * Keeps the node's revocation list current: every crl_refresh_seconds it reads HOME/certs/crl.pem again (a
 * revocation on the CA machine, or pki import-crl, writes it), and when ca_peer names a registered peer it asks
 * that peer over mutual TLS for its list (GET /pki/crl). Failures are logged once per run of failures, and the
 * list in force stays.
 */
export function startCrlSync(options: CrlSyncOptions): CrlSync {
  const { state, log } = options;
  let failing: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let chain = Promise.resolve();
  let stopped = false;

  const fetchFromPeer = async (peerName: string) => {
    const peer = options.peers.get(peerName);
    if (!peer) throw new Error(`ca_peer '${peerName}' is not a registered peer (a2a-node peers add ${peerName} URL)`);
    const url = new URL(CRL_PATH, peer.url).toString();
    const res = await options.fetchFor(peer)(url, { signal: AbortSignal.timeout(15_000) });
    if (res.status === 404) return void (await res.arrayBuffer()); // the CA node has revoked nothing yet
    if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
    state.offer(await res.text(), `peer '${peer.name}'`, peer.name);
  };

  const round = async () => {
    state.loadFromDisk();
    const { caPeer } = options.settings();
    if (!caPeer) return;
    try {
      await fetchFromPeer(caPeer);
      if (failing) log.info("fetched the revocation list again", { ca_peer: caPeer });
      failing = undefined;
    } catch (err) {
      const reason = (err as Error).message;
      if (failing !== reason) log.warn("could not fetch the revocation list; the one in force stays", { ca_peer: caPeer, reason });
      failing = reason;
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
