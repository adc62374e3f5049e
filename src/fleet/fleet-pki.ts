import type { NodeIdentity } from "../../pki/identity";
import { mtlsFetch } from "../client/mtls-fetch";
import type { Logger } from "../log";
import type { PeerRegistry } from "../peers/peer-registry";
import type { Listener } from "../server/mtls-listener";
import { startCrlSync, type CrlSync } from "./crl-sync";
import { watchExpiry, type ExpiryWatch } from "./expiry-watch";
import { createPkiRoutes, type PkiRoutes } from "./pki-routes";
import { RevocationState } from "./revocation-state";

export interface FleetPkiOptions {
  /** HOME/certs/crl.pem */
  crlPath: string;
  /** This node's identity as it is now (it changes on SIGHUP and renewal). */
  identity(): NodeIdentity;
  peers: PeerRegistry;
  /** The live settings (SIGHUP updates the reloadable ones in place). */
  settings(): { caPeer?: string; crlRefreshMs: number };
  log: Logger;
}

/**
 * The daemon's part in the fleet PKI, in one piece: the revocation list it enforces (kept current from disk and
 * from the CA peer), the /pki/ routes it serves, and the expiry warnings in its log.
 */
export class FleetPki {
  readonly revocations: RevocationState;
  readonly routes: PkiRoutes;
  private crlSync: CrlSync | undefined;
  private expiry: ExpiryWatch | undefined;

  constructor(private readonly options: FleetPkiOptions) {
    this.revocations = new RevocationState(options.crlPath, options.identity, options.log);
    this.revocations.loadFromDisk();
    this.routes = createPkiRoutes({ revocations: this.revocations });
  }

  /** Starts the background work once the mTLS listener is up: a new revocation list ends revoked peers' open connections. */
  start(listener: Listener): void {
    const { options } = this;
    this.revocations.onChange(() => listener.dropRevoked?.());
    this.crlSync = startCrlSync({
      state: this.revocations,
      peers: options.peers,
      settings: options.settings,
      fetchFor: (peer) => this.fetchAs(peer),
      log: options.log,
    });
    this.expiry = watchExpiry(options.identity, options.log);
  }

  /** An mTLS fetch to a named peer as this node, refusing a revoked server. */
  fetchAs(peer: { name: string; fingerprint?: string }) {
    const id = this.options.identity();
    return mtlsFetch({ cert: id.certPem, key: id.keyPem, ca: id.caPem }, { name: peer.name, fingerprint: peer.fingerprint }, this.revocations.revokedAt);
  }

  /** SIGHUP: the revocation list is read and fetched again at once, and expiry looked at again. */
  async refresh(): Promise<void> {
    this.expiry?.check();
    await this.crlSync?.refreshNow();
  }

  stop(): void {
    this.crlSync?.stop();
    this.expiry?.stop();
  }
}
