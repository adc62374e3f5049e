import { existsSync, readFileSync } from "node:fs";
import { isEncryptedKey } from "../../pki/ca-key";
import type { NodeIdentity } from "../../pki/identity";
import { peerTimeouts, type PeerTimeoutSettings } from "../client/deadlines";
import { expectationOf, mtlsFetch } from "../client/mtls-fetch";
import type { HomePaths } from "../home";
import type { Logger } from "../log";
import type { PeerRegistry } from "../peers/peer-registry";
import type { Listener } from "../server/mtls-listener";
import type { HttpRequest, HttpResponse } from "../server/http1";
import type { CallerIdentity } from "../rpc/caller";
import type { AccessRule } from "../rpc/access-policy";
import type { CheckResult } from "../server/readiness";
import { startAutoRenew, type AutoRenew } from "./auto-renew";
import { renewHandler } from "./ca-service";
import { enrollHandler, type EnrollEvents } from "./enroll-service";
import { listenEnroll, type EnrollListenerOptions } from "../server/enroll-listener";
import { CRL_PATH, startCrlSync, type CrlSync } from "./crl-sync";
import { watchExpiry, type ExpiryWatch } from "./expiry-watch";
import { createPkiRoutes, type PkiRoutes } from "./pki-routes";
import { renewIdentity } from "./renewal";
import { newIdentityHint, RevocationState } from "./revocation-state";
import { supersedeInUse } from "../../pki/supersede";
import { CRL_VALID_REFRESHES, crlValidForMs } from "../../pki/crl-validity";

export interface FleetPkiOptions {
  paths: HomePaths;
  /** This node's identity as it is now (it changes on SIGHUP and renewal). */
  identity(): NodeIdentity;
  /** Makes `fresh` this node's identity for everything that reads identity() (the agent card, new dials). */
  adopt(fresh: NodeIdentity): void;
  peers: PeerRegistry;
  /** The live settings (SIGHUP updates the reloadable ones in place). */
  settings(): {
    caPeer?: string;
    crlRefreshMs: number;
    caPassphrase?: string;
    authorize?: readonly AccessRule[];
  } & PeerTimeoutSettings;
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

  /**
   * The home's paths, with the CA key's passphrase from the settings (when the key is encrypted) and how long
   * a list signed here is valid (CRL_VALID_REFRESHES periods).
   */
  private readonly paths: HomePaths & { unlock: () => Promise<string | undefined>; readonly crlValidForMs: number };
  /** Certificates this CA node has seen in use, whose predecessors it has superseded already (see seenInUse). */
  private readonly inUse = new Set<string>();
  private readonly startedAt = Date.now();

  constructor(private readonly options: FleetPkiOptions) {
    this.paths = {
      ...options.paths,
      unlock: async () => options.settings().caPassphrase,
      get crlValidForMs() {
        return crlValidForMs(options.settings().crlRefreshMs);
      },
    };
    if (
      existsSync(options.paths.caKey) &&
      isEncryptedKey(readFileSync(options.paths.caKey, "utf8")) &&
      !options.settings().caPassphrase
    )
      options.log.warn(
        "the fleet CA key is encrypted and no passphrase is set: renewals and enrollments by this node will fail",
        {
          next: "set A2A_NODE_CA_PASSPHRASE or ca_passphrase_file",
        },
      );
    this.revocations = new RevocationState(options.paths.crl, options.identity, options.log);
    this.revocations.loadFromDisk();
    this.routes = createPkiRoutes({
      revocations: this.revocations,
      renew: renewHandler(this.paths, options.log, (caller) => this.mayRenew(caller)),
      seen: (caller) => this.seenInUse(caller.fingerprint),
      log: options.log,
    });
  }

  /** Whether this home holds the fleet CA (and so signs the list and renews certificates). */
  private get caHome(): boolean {
    return existsSync(this.options.paths.caKey);
  }

  /**
   * Whether the policy lets `caller` renew: [[authorize]] names it in some table (or there is no policy). A node
   * refused everything by the policy gets no new certificate either.
   */
  private mayRenew(caller: CallerIdentity): boolean {
    const rules = this.options.settings().authorize ?? [];
    return rules.length === 0 || rules.some((r) => r.peers.includes("*") || r.peers.includes(caller.name));
  }

  /**
   * On the CA node: a certificate was presented (on a /pki/ route) or is served by this node itself; if it is a
   * renewal, the certificate it renewed is superseded now (pki/issuance.ts supersedeInUse). Each certificate is
   * looked up once per process; a failure (an encrypted CA key without its passphrase) is tried again next time.
   */
  private async seenInUse(fingerprint256: string): Promise<void> {
    if (this.inUse.has(fingerprint256) || !this.caHome) return;
    const gone = await supersedeInUse(this.paths, fingerprint256);
    this.inUse.add(fingerprint256);
    for (const c of gone)
      this.options.log.info("revoked a renewed certificate: its holder uses the new one", {
        name: c.name,
        serial: c.serial,
        reason: c.revokeReason,
      });
    if (gone.length) this.revocations.loadFromDisk();
  }

  /**
   * On the CA node, each round: a new list once the one in force is a refresh period old (so it never reaches
   * its next update while this node runs and can sign). Nothing is signed while nothing was ever revoked (no
   * list).
   */
  private async localCa(): Promise<void> {
    const list = this.revocations.current();
    const period = this.options.settings().crlRefreshMs;
    const now = Date.now();
    if (list && now - list.thisUpdate.getTime() >= period) {
      const [{ openCaRegistry }, { publishCrl }] = await Promise.all([
        import("../../pki/issuance"),
        import("../../pki/crl-publish"),
      ]);
      const registry = openCaRegistry(this.paths);
      try {
        await publishCrl(this.paths, registry);
      } finally {
        registry.close();
      }
      this.revocations.loadFromDisk();
    }
    if (this.revocations.current()) this.revocations.confirm();
  }

  /**
   * GET /health/ready's revocation check. The policy is to fail open: a node that cannot get a newer list goes
   * on judging connections by the one it has (what it revoked stays refused), since refusing every peer while
   * the CA machine is down would stop the whole fleet. What it cannot know is said: once the list in force is
   * past its next update (CRL_VALID_REFRESHES refresh periods after the CA signed it, and the CA signs a new one
   * every period), this check fails (503), on a node that has a way to get a newer one (ca_peer, or the CA key).
   * A list brought by hand (import-crl) is shown with its age, and does not fail it.
   */
  revocationCheck(now = new Date()): CheckResult {
    const list = this.revocations.current();
    const caPeer = this.options.settings().caPeer;
    const period = this.options.settings().crlRefreshMs;
    const source = this.caHome ? "this node's fleet CA" : caPeer ? `ca_peer '${caPeer}'` : "by hand (pki import-crl)";
    const confirmed = this.revocations.confirmedAt();
    const facts = { source, lastConfirmed: confirmed?.toISOString() ?? null };
    if (!list) {
      // ca_peer set and never reached since start: whether anything was revoked is not known.
      if (caPeer && !this.caHome && !confirmed && now.getTime() - this.startedAt > CRL_VALID_REFRESHES * period)
        return {
          ok: false,
          detail: `no revocation list, and ${source} has not answered since this node started: revocations are not known here (connections are still taken)`,
          ...facts,
        };
      return { ok: true, detail: "no revocation list: nothing revoked yet", ...facts };
    }
    const ageSeconds = Math.round((now.getTime() - list.thisUpdate.getTime()) / 1000);
    const more = {
      ...facts,
      number: list.number,
      revoked: list.revoked.size,
      signed: list.thisUpdate.toISOString(),
      nextUpdate: list.nextUpdate?.toISOString() ?? null,
      ageSeconds,
    };
    const stale = list.nextUpdate !== undefined && now.getTime() > list.nextUpdate.getTime();
    const about = `revocation list number ${list.number} (${list.revoked.size} revoked), signed ${ageSeconds} s ago`;
    if (stale && source.startsWith("by hand"))
      return {
        ok: true,
        detail: `${about}, brought by hand: past its next update (${list.nextUpdate!.toISOString()}); import a newer one from the CA machine`,
        ...more,
        stale,
      };
    if (stale)
      return {
        ok: false,
        detail:
          `${about}: stale since ${list.nextUpdate!.toISOString()} (its next update), ${this.caHome ? "this CA node could not sign a newer one (see its log)" : `${source} has given no newer one${confirmed ? ` since ${confirmed.toISOString()}` : ""}`}; ` +
          "revocations made since are not known here, and connections are still taken (fail open)",
        ...more,
        stale,
      };
    return {
      ok: true,
      detail: `${about}, from ${source}; next update ${list.nextUpdate?.toISOString() ?? "not set"}`,
      ...more,
      stale,
    };
  }

  /** The list in force, for the metrics: its age and next update. */
  revocationFacts(): { ageSeconds: number; nextUpdate?: Date } | undefined {
    const list = this.revocations.current();
    return list && { ageSeconds: (Date.now() - list.thisUpdate.getTime()) / 1000, nextUpdate: list.nextUpdate };
  }

  /**
   * The answer to a request on a connection whose certificate is revoked, before the node closes it: the
   * revocation list itself (GET /pki/crl, so a revoked node learns it is revoked, from the CA's own signature),
   * or 403 saying why, in words, as a google.rpc.Status (which a JSON-RPC client reads as an error too).
   */
  async revokedAnswer(req: HttpRequest, reason: string, name: string): Promise<HttpResponse> {
    const path = req.target.split("?")[0];
    const list = this.revocations.current();
    if (req.method === "GET" && path === CRL_PATH && list)
      return {
        status: 200,
        headers: { "content-type": "application/x-pem-file", "x-crl-number": String(list.number) },
        body: list.pem,
      };
    // reason: "its certificate (serial X) was revoked on T" (pki/fleet-member.ts).
    const what = reason
      .replace(/^its certificate/, "the client certificate")
      .replace(" was revoked on ", " was revoked by the fleet CA on ");
    const message = `${this.options.identity().name} refuses this connection: ${what}; ${newIdentityHint(name)}`;
    return {
      status: 403,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        error: {
          code: 403,
          status: "PERMISSION_DENIED",
          message,
          details: [
            { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "CERTIFICATE_REVOKED", domain: "a2a-node" },
          ],
        },
      }),
    };
  }

  /**
   * Starts the background work once the mTLS listener is up: a new revocation list ends revoked peers' open
   * connections.
   */
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
      localCa: this.caHome ? () => this.localCa() : undefined,
      log: options.log,
    });
    this.expiry = watchExpiry(options.identity, options.log, {
      renewHint: "a2a-node pki renew (or set ca_peer, and the node renews by itself)",
    });
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
    if (caPeer && !peer && !existsSync(options.paths.caKey))
      throw new Error(`ca_peer '${caPeer}' is not a registered peer (a2a-node peers add ${caPeer} URL)`);
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

  /**
   * Serves `fresh` to new connections (open ones keep theirs) and makes it the node's identity. Then a round of
   * the revocation list at once, with it: the CA node sees the renewed certificate in use (the fetch from
   * ca_peer presents it; on the CA node itself, localCa) and supersedes the one it renewed.
   */
  useIdentity(fresh: NodeIdentity): void {
    for (const l of [this.listener, this.enroll, ...this.alsoServing])
      l?.setIdentity?.({ cert: fresh.certPem, key: fresh.keyPem, ca: fresh.caPem });
    this.options.adopt(fresh);
    this.autoRenew?.replan();
    if (this.caHome)
      void this.seenInUse(fresh.fingerprint256).catch((err) =>
        this.options.log.warn("could not revoke the certificate this node renewed", { reason: (err as Error).message }),
      );
    else void this.crlSync?.refreshNow();
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
      log.warn("enroll_port is set, but this home does not hold the fleet CA: no enrollment port", {
        enroll_port: opts.port,
      });
      return undefined;
    }
    const id = this.options.identity();
    this.enroll = await listenEnroll({
      ...opts,
      cert: id.certPem,
      key: id.keyPem,
      maxBodyBytes: 64 * 1024,
      onRequest: enrollHandler(
        paths,
        () => ({ name: this.options.identity().name, port: opts.mtlsPort }),
        log,
        opts.events,
      ),
    });
    log.warn("enrollment port open: a machine with a join token from 'pki token' gets a certificate there", {
      url: this.enroll.url,
    });
    return this.enroll;
  }

  /** An mTLS fetch to a named peer as this node, refusing a revoked server. */
  fetchAs(peer: { name: string; keyPin?: string; fingerprint?: string }) {
    const id = this.options.identity();
    return mtlsFetch(
      { cert: id.certPem, key: id.keyPem, ca: id.caPem },
      expectationOf(peer),
      this.revocations.revokedAt,
      {
        // An older certificate pin that matched becomes a key pin, which the peer's renewals keep.
        certPinMatched: (accepted) => {
          if (this.options.peers.get(peer.name)?.keyPin) return; // converted already (by an earlier connection)
          if (this.options.peers.pinKey(peer.name, accepted.keyPin))
            this.options.log.info("converted a peer's certificate pin to a key pin", {
              peer: peer.name,
              key_pin: accepted.keyPin,
            });
        },
      },
      peerTimeouts(this.options.settings()),
    );
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
