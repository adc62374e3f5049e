import { existsSync, readFileSync } from "node:fs";
import { isEncryptedKey } from "../../pki/ca-key";
import type { NodeIdentity } from "../../pki/identity";
import { peerTimeouts, type PeerTimeoutSettings } from "../client/deadlines";
import { expectationOf, mtlsFetch } from "../client/mtls-fetch";
import type { HomePaths } from "../home";
import type { Logger } from "../log";
import type { PeerRegistry } from "../peers/peer-registry";
import type { Listener } from "../server/mtls-listener";
import { startAutoRenew, type AutoRenew } from "./auto-renew";
import { renewHandler } from "./ca-service";
import { enrollHandler, type EnrollEvents } from "./enroll-service";
import { listenEnroll, type EnrollListenerOptions } from "../server/enroll-listener";
import { startCrlSync, type CrlSync } from "./crl-sync";
import { watchExpiry, type ExpiryWatch } from "./expiry-watch";
import { createPkiRoutes, type PkiRoutes } from "./pki-routes";
import { renewIdentity } from "./renewal";
import { RevocationState } from "./revocation-state";

export interface FleetPkiOptions {
  paths: HomePaths;
  /** This node's identity as it is now (it changes on SIGHUP and renewal). */
  identity(): NodeIdentity;
  /** Makes `fresh` this node's identity for everything that reads identity() (the agent card, new dials). */
  adopt(fresh: NodeIdentity): void;
  peers: PeerRegistry;
  /** The live settings (SIGHUP updates the reloadable ones in place). */
  settings(): { caPeer?: string; crlRefreshMs: number; caPassphrase?: string } & PeerTimeoutSettings;
  log: Logger;
}

/**
 * The daemon's part in the fleet PKI, in one piece: the revocation list it enforces (kept current from disk and
 * from the CA peer), the /pki/ routes it serves (the list; renewals, on the CA node), renewing its own
 * certificate at two thirds of its lifetime, and the expiry warnings in its log.
 */
export class FleetPki {
  readonly revocations: RevocationState;
  readonly routes: PkiRoutes;
  private listener: Listener | undefined;
  /** Other listeners that present this node's certificate (the token listener), given it too on renewal. */
  private alsoServing: Listener[] = [];
  private enroll: Listener | undefined;
  private crlSync: CrlSync | undefined;
  private expiry: ExpiryWatch | undefined;
  private autoRenew: AutoRenew | undefined;

  /** The home's paths, with the CA key's passphrase from the settings (when the key is encrypted). */
  private readonly paths: HomePaths & { unlock: () => Promise<string | undefined> };

  constructor(private readonly options: FleetPkiOptions) {
    this.paths = { ...options.paths, unlock: async () => options.settings().caPassphrase };
    if (existsSync(options.paths.caKey) && isEncryptedKey(readFileSync(options.paths.caKey, "utf8")) && !options.settings().caPassphrase)
      options.log.warn("the fleet CA key is encrypted and no passphrase is set: renewals and enrollments by this node will fail", {
        next: "set A2A_NODE_CA_PASSPHRASE or ca_passphrase_file",
      });
    this.revocations = new RevocationState(options.paths.crl, options.identity, options.log);
    this.revocations.loadFromDisk();
    this.routes = createPkiRoutes({ revocations: this.revocations, renew: renewHandler(this.paths, options.log) });
  }

  /** Starts the background work once the mTLS listener is up: a new revocation list ends revoked peers' open connections. */
  start(listener: Listener, alsoServing: Listener[] = []): void {
    const { options } = this;
    this.listener = listener;
    this.alsoServing = alsoServing;
    this.revocations.onChange(() => listener.dropRevoked?.());
    this.crlSync = startCrlSync({
      state: this.revocations,
      peers: options.peers,
      settings: options.settings,
      fetchFor: (peer) => this.fetchAs(peer),
      log: options.log,
    });
    this.expiry = watchExpiry(options.identity, options.log, { renewHint: "a2a-node pki renew (or set ca_peer, and the node renews by itself)" });
    this.autoRenew = startAutoRenew({
      current: options.identity,
      canRenew: () => existsSync(options.paths.caKey) || options.settings().caPeer !== undefined,
      renew: async () => void (await this.renew()),
      log: options.log,
    });
  }

  /** Renews this node's certificate now, from the CA node or this home's CA, and serves it to new connections. */
  async renew(): Promise<NodeIdentity> {
    const { options } = this;
    const caPeer = options.settings().caPeer;
    const peer = caPeer ? options.peers.get(caPeer) : undefined;
    if (caPeer && !peer && !existsSync(options.paths.caKey)) throw new Error(`ca_peer '${caPeer}' is not a registered peer (a2a-node peers add ${caPeer} URL)`);
    const before = options.identity();
    const fresh = await renewIdentity(this.paths, before, { peer, fetchFor: (p) => this.fetchAs(p) });
    this.useIdentity(fresh);
    options.log.info("renewed this node's certificate; new connections use it", {
      name: fresh.name,
      serial: fresh.serialNumber,
      expires: fresh.notAfter.toISOString(),
      previous_expires: before.notAfter.toISOString(),
    });
    return fresh;
  }

  /** Serves `fresh` to new connections (open ones keep theirs) and makes it the node's identity. */
  useIdentity(fresh: NodeIdentity): void {
    for (const l of [this.listener, this.enroll, ...this.alsoServing]) l?.setIdentity?.({ cert: fresh.certPem, key: fresh.keyPem, ca: fresh.caPem });
    this.options.adopt(fresh);
    this.autoRenew?.replan();
  }

  /**
   * The enrollment port (enroll_port), on the node holding the fleet CA only: machines with a join token get
   * their certificate there (src/fleet/enroll-service.ts). Undefined, with a warning, elsewhere.
   */
  async openEnrollment(
    opts: { host: string; port: number; mtlsPort: number; events?: EnrollEvents } & Pick<
      EnrollListenerOptions,
      "handshakeTimeoutMs" | "limits" | "http" | "onHandshakeError" | "onRefusedConnection" | "tooLarge"
    >,
  ): Promise<Listener | undefined> {
    const { log } = this.options;
    const paths = this.paths;
    if (!existsSync(paths.caKey)) {
      log.warn("enroll_port is set, but this home does not hold the fleet CA: no enrollment port", { enroll_port: opts.port });
      return undefined;
    }
    const id = this.options.identity();
    this.enroll = await listenEnroll({
      ...opts,
      cert: id.certPem,
      key: id.keyPem,
      maxBodyBytes: 64 * 1024,
      onRequest: enrollHandler(paths, () => ({ name: this.options.identity().name, port: opts.mtlsPort }), log, opts.events),
    });
    log.warn("enrollment port open: a machine with a join token from 'pki token' gets a certificate there", { url: this.enroll.url });
    return this.enroll;
  }

  /** An mTLS fetch to a named peer as this node, refusing a revoked server. */
  fetchAs(peer: { name: string; keyPin?: string; fingerprint?: string }) {
    const id = this.options.identity();
    return mtlsFetch({ cert: id.certPem, key: id.keyPem, ca: id.caPem }, expectationOf(peer), this.revocations.revokedAt, {
      // An older certificate pin that matched becomes a key pin, which the peer's renewals keep.
      certPinMatched: (accepted) => {
        if (this.options.peers.get(peer.name)?.keyPin) return; // converted already (by an earlier connection)
        if (this.options.peers.pinKey(peer.name, accepted.keyPin)) this.options.log.info("converted a peer's certificate pin to a key pin", { peer: peer.name, key_pin: accepted.keyPin });
      },
    }, peerTimeouts(this.options.settings()));
  }

  /** SIGHUP: the revocation list is read and fetched again at once, and expiry looked at again. */
  async refresh(): Promise<void> {
    this.expiry?.check();
    await this.crlSync?.refreshNow();
  }

  stop(): void {
    this.crlSync?.stop();
    this.expiry?.stop();
    this.autoRenew?.stop();
  }
}
