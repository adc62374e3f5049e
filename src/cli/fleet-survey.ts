import { X509Certificate } from "node:crypto";
import { explainProbe, type Target } from "../client/connect";
import { probePeer, type ServerCertificate } from "../client/probe";
import { DEFAULT_PEER_TIMEOUTS } from "../client/deadlines";
import { isOutsidePeer, type Peer } from "../peers/peer-registry";
import { dialable, runningNodeState } from "../runtime-state";
import { sessionForTarget, type ClientIdentity, type ClientPolicy } from "./client-session";
import { CliError, ExitCode } from "./errors";

/**
 * What `a2a-node fleet` shows of one node: this one or a peer, as this node sees it. Every fact is optional
 * but the name and the state: a node that does not answer still has a row, saying why in the words `send`
 * and `peers ping` use for the same failure.
 */
export interface FleetRow {
  name: string;
  role: "self" | "peer" | "outside";
  url?: string;
  /** up: it answered over a connection we accepted. The rest name what stopped it. */
  state: "up" | "down" | "refused" | "timeout" | "error" | "not running";
  why?: string;
  /** Round trip of GET /health once connected (ms, one decimal); an outside peer's agent-card read. */
  ms?: number;
  version?: string;
  executor?: string;
  card?: { name: string; skills: string[] };
  certificate?: { notAfter: string; daysLeft: number; keyPin?: string; serial?: string };
  /** How the peer list pins it, and whether the key it showed matches. */
  pin?:
    | "key pin matches"
    | "key pin DIFFERS"
    | "certificate pin matches"
    | "certificate pin DIFFERS"
    | "not pinned"
    | "outside the fleet";
  /** When the fleet's revocation list this home holds revoked it; absent when it is not on the list (or unknown). */
  revokedAt?: string;
  /** Tasks running, queued for a slot, and waiting for input, from its /metrics, when it shares them with us. */
  load?: { running: number; queued: number; inputRequired: number };
  loadWhy?: string;
}

export interface SurveyOptions {
  identity: ClientIdentity;
  policy: ClientPolicy;
  /** The bound on one node's whole check; all run at once, so this bounds the survey too. */
  perNodeMs: number;
  now?: () => number;
}

const DAY_MS = 86_400_000;

/** This node (if its serve runs, asked where serve.json says it listens) and every peer, all at once. */
export async function surveyFleet(home: string, peers: Peer[], o: SurveyOptions): Promise<FleetRow[]> {
  const own = o.identity.own.name;
  const running = runningNodeState(home);
  const self: Promise<FleetRow> = running
    ? bounded(
        checkNode({ name: own, url: dialable(running.urls.mtls), keyPin: undefined }, "self", o),
        own,
        "self",
        o.perNodeMs,
      )
    : Promise.resolve(selfNotRunning(o));
  const rows = await Promise.all([
    self,
    ...peers.map((p) =>
      bounded(checkNode(p, isOutsidePeer(p) ? "outside" : "peer", o), p.name, "peer", o.perNodeMs, p.url),
    ),
  ]);
  return rows;
}

function selfNotRunning(o: SurveyOptions): FleetRow {
  const row: FleetRow = {
    name: o.identity.own.name,
    role: "self",
    state: "not running",
    why: "no 'a2a-node serve' runs for this home (HOME/serve.json)",
  };
  describeOwnCertificate(row, o);
  return row;
}

/** Our own certificate, as a peer's row shows theirs: expiry and revocation by the list this home holds. */
function describeOwnCertificate(row: FleetRow, o: SurveyOptions): void {
  try {
    const cert = new X509Certificate(o.identity.tls.cert);
    const serial = cert.serialNumber.toUpperCase().replace(/^0+(?=.)/, "");
    row.certificate = certificateFacts(
      { notAfter: new Date(cert.validTo).toISOString(), serial, fingerprint: "", keyPin: "" },
      o,
    );
    const revoked = o.identity.revoked?.(serial);
    if (revoked) row.revokedAt = revoked.toISOString();
  } catch {
    // the identity loaded, so this does not happen; a row without the facts is still a row
  }
}

/** A row that says the node took longer than its bound, whatever step it was at. */
async function bounded(
  check: Promise<FleetRow>,
  name: string,
  role: FleetRow["role"],
  ms: number,
  url?: string,
): Promise<FleetRow> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<FleetRow>((resolve) => {
    timer = setTimeout(
      () => resolve({ name, role, url, state: "timeout", why: `no full answer within ${ms / 1000} s (--timeout)` }),
      ms,
    );
  });
  try {
    return await Promise.race([check, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkNode(
  peer: Pick<Peer, "name" | "url" | "keyPin"> & Partial<Peer>,
  role: FleetRow["role"],
  o: SurveyOptions,
): Promise<FleetRow> {
  const base = new URL(peer.url);
  const row: FleetRow = { name: peer.name, role, url: peer.url, state: "error" };
  const fullPeer = role === "self" ? undefined : (peer as Peer);
  const target: Target = {
    label: role === "self" ? "this node" : `peer '${peer.name}'`,
    baseUrl: base.origin,
    rpcUrl: peer.url,
    peer: fullPeer,
  };
  if (role === "self") describeOwnCertificate(row, o);

  if (role !== "outside") {
    // The probe first: it names the step that failed, and shows the certificate even of a node we then refuse.
    const probe = await probePeer(base, o.identity.tls, o.policy.timeouts ?? DEFAULT_PEER_TIMEOUTS);
    const certificate = "certificate" in probe ? probe.certificate : undefined;
    if (certificate && role === "peer") {
      row.certificate = certificateFacts(certificate, o);
      row.pin = pinState(peer, certificate);
      const revoked = certificate.serial ? o.identity.revoked?.(certificate.serial) : undefined;
      if (revoked) row.revokedAt = revoked.toISOString();
    }
    if (probe.kind !== "ok") {
      const failure = explainProbe(probe, target, o.identity.own);
      row.state = failure?.kind === "refused" ? "refused" : probe.kind === "timeout" ? "timeout" : "down";
      row.why = failure?.message;
      return row;
    }
  } else row.pin = "outside the fleet";

  let session;
  try {
    session = await sessionForTarget(target, async () => o.identity, { ...o.policy, home: undefined, note: undefined });
  } catch (err) {
    return failed(row, err);
  }
  if (session.card) row.card = { name: session.card.name, skills: (session.card.skills ?? []).map((s) => s.id) };
  if (role === "outside") {
    row.ms = session.cardMs === undefined ? undefined : round(session.cardMs);
    row.state = session.card ? "up" : "error";
    if (!session.card) row.why = `${target.label} at ${base.origin} served no agent card`;
    row.version = session.card?.version;
    return row;
  }
  try {
    const t0 = performance.now();
    const res = await session.fetch(new URL("/health", base).toString(), { headers: { accept: "application/json" } });
    const health = (await res.json()) as { version?: string; executor?: string };
    row.ms = round(performance.now() - t0);
    row.version = health.version;
    row.executor = health.executor;
    row.state = "up";
  } catch (err) {
    return failed(row, err);
  }
  await readLoad(row, session.fetch, base);
  return row;
}

function failed(row: FleetRow, err: unknown): FleetRow {
  const e = err as { message?: string; exitCode?: number };
  row.why = e?.message ?? String(err);
  row.state =
    err instanceof CliError
      ? err.exitCode === ExitCode.Refused
        ? "refused"
        : err.exitCode === ExitCode.Unreachable
          ? "down"
          : err.exitCode === ExitCode.Timeout
            ? "timeout"
            : "error"
      : "error";
  return row;
}

/**
 * The node's load, from the gauges its /metrics already serves on the mutual-TLS port (a fleet member may read
 * them; no endpoint was added for this). A node that does not serve them to us gets a reason instead.
 */
async function readLoad(
  row: FleetRow,
  fetchFn: (url: string, init: RequestInit) => Promise<Response>,
  base: URL,
): Promise<void> {
  try {
    const res = await fetchFn(new URL("/metrics", base).toString(), { headers: { accept: "text/plain" } });
    if (!res.ok) {
      await res.body?.cancel();
      row.loadWhy = `its /metrics answered HTTP ${res.status}`;
      return;
    }
    const text = await res.text();
    const gauge = (name: string) => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
      return m ? Number(m[1]) : undefined;
    };
    const running = gauge("a2a_node_tasks_running");
    const queued = gauge("a2a_node_tasks_queued");
    const inputRequired = gauge("a2a_node_tasks_waiting_for_input");
    if (running === undefined || queued === undefined || inputRequired === undefined)
      row.loadWhy = "its /metrics has no task gauges (an older version?)";
    else row.load = { running, queued, inputRequired };
  } catch (err) {
    row.loadWhy = `its /metrics could not be read: ${(err as Error)?.message ?? String(err)}`;
  }
}

function certificateFacts(c: ServerCertificate, o: SurveyOptions): NonNullable<FleetRow["certificate"]> {
  const now = (o.now ?? Date.now)();
  return {
    notAfter: c.notAfter,
    daysLeft: Math.floor((Date.parse(c.notAfter) - now) / DAY_MS),
    ...(c.keyPin ? { keyPin: c.keyPin } : {}),
    ...(c.serial ? { serial: c.serial } : {}),
  };
}

function pinState(peer: Partial<Peer>, c: ServerCertificate): FleetRow["pin"] {
  if (peer.keyPin) return peer.keyPin === c.keyPin ? "key pin matches" : "key pin DIFFERS";
  if (peer.fingerprint)
    return peer.fingerprint.toUpperCase() === c.fingerprint.toUpperCase()
      ? "certificate pin matches"
      : "certificate pin DIFFERS";
  return "not pinned";
}

const round = (n: number) => Math.round(n * 10) / 10;
