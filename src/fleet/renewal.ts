import { X509Certificate, createPrivateKey } from "node:crypto";
import { loadNodeIdentity, type NodeIdentity } from "../../pki/identity";
import type { CaPaths } from "../../pki/issuance";
import { installRenewedIdentity, type NodeFiles } from "../../pki/renewal-files";
import type { FetchFn } from "../client/peer-client";
import type { Peer } from "../peers/peer-registry";
import { RENEW_PATH, type RenewAnswer } from "./ca-service";

/** A renewal that did not happen; the message says why, the identity in use is unchanged. */
export class RenewalError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = "RenewalError";
  }
}

export type RenewalPaths = CaPaths & NodeFiles & { nodeKey: string };

export interface RenewalSource {
  /** The CA node, as a registered peer, and an mTLS fetch to it as this node. */
  peer?: Peer;
  fetchFor?(peer: Peer): FetchFn;
}

/**
 * Renews this node's certificate for the same name and SANs: from the CA node (`peer`) over mutual TLS, or,
 * when this home holds the fleet CA, from it directly. The key is kept (pins of this node's key on other
 * machines stay valid, as with step-ca's `renew`); with `rekey`, a new key is made here (step-ca's `rekey`),
 * and every pin of this node must be updated. What comes back is checked (issued by our fleet CA, for our
 * name, for the key asked for) before it replaces the current pair (installRenewedIdentity: the old files stay
 * until the new ones are in place). Returns the new identity.
 */
export async function renewIdentity(
  paths: RenewalPaths,
  current: NodeIdentity,
  source: RenewalSource,
  options: { rekey?: boolean } = {},
): Promise<NodeIdentity> {
  const { createCsr } = await import("../../pki/csr");
  const { csrPem, keyPem } = await createCsr({
    name: current.name,
    sans: [],
    keyPem: options.rekey ? undefined : current.keyPem,
  });
  let certPem: string;
  if (current.hasCaKey) certPem = await renewLocally(paths, current, csrPem);
  else if (source.peer && source.fetchFor)
    certPem = await renewFromPeer(source.peer, source.fetchFor(source.peer), current, csrPem);
  else
    throw new RenewalError(
      "no CA to renew from: this home does not hold the fleet CA, and no ca_peer is set",
      "set ca_peer to the peer that holds the fleet CA (config file, A2A_NODE_CA_PEER), or pass --ca-peer NAME",
    );
  checkRenewed(certPem, keyPem, current);
  installRenewedIdentity(paths, { certPem, keyPem });
  return loadNodeIdentity(paths);
}

async function renewLocally(paths: CaPaths, current: NodeIdentity, csrPem: string): Promise<string> {
  const [{ openCaRegistry }, { renewRecorded }] = await Promise.all([
    import("../../pki/issuance"),
    import("../../pki/renewal"),
  ]);
  const registry = openCaRegistry(paths);
  try {
    // This home holds the CA key: its own certificate is renewed even once expired (the key is kept, pins hold).
    const issued = await renewRecorded(paths, registry, {
      csrPem,
      currentCertPem: current.certPem,
      presented: { name: current.name, fingerprint256: current.fingerprint256 },
      acceptExpired: true,
    });
    return issued.certPem;
  } finally {
    registry.close();
  }
}

async function renewFromPeer(peer: Peer, fetchFn: FetchFn, current: NodeIdentity, csrPem: string): Promise<string> {
  const url = new URL(RENEW_PATH, peer.url).toString();
  let res: Response;
  try {
    res = await fetchFn(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ csr: csrPem, cert: current.certPem }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new RenewalError(
      `cannot reach the CA node, peer '${peer.name}' at ${peer.url}: ${(err as Error).message}`,
      "is 'a2a-node serve' running there? check with 'a2a-node peers list'",
    );
  }
  const text = await res.text();
  let body: Partial<RenewAnswer> & { error?: string } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Reported below with the status.
  }
  if (!res.ok)
    throw new RenewalError(
      `peer '${peer.name}' refused the renewal (HTTP ${res.status}): ${body.error ?? text.slice(0, 200)}`,
    );
  if (typeof body.cert !== "string")
    throw new RenewalError(`peer '${peer.name}' answered the renewal without a certificate`);
  return body.cert;
}

/** The renewed certificate is our CA's, for our name, for the key made here, and valid now. */
function checkRenewed(certPem: string, keyPem: string, current: NodeIdentity): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw new RenewalError("the CA node answered with something that is not a certificate");
  }
  const ca = new X509Certificate(current.caPem);
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    throw new RenewalError("the renewed certificate was not issued by this fleet's CA");
  if (cert.subject !== `CN=${current.name}`)
    throw new RenewalError(`the renewed certificate is for ${JSON.stringify(cert.subject)}, not CN=${current.name}`);
  if (!cert.checkPrivateKey(createPrivateKey(keyPem)))
    throw new RenewalError("the renewed certificate is not for the key made for it");
  const now = Date.now();
  if (now < cert.validFromDate.getTime() || now > cert.validToDate.getTime())
    throw new RenewalError("the renewed certificate is not valid now (check the clocks)");
}
