import { hostname } from "node:os";
import { isIP } from "node:net";
import { resolve } from "node:path";
import { loadNodeIdentity } from "../pki/identity";
import { SETTINGS, type ServeConfig, type SettingName } from "./config";
import { ConformanceExecutor } from "./executors/conformance-executor";
import { EchoExecutor } from "./executors/echo-executor";
import { HermesExecutor } from "./executors/hermes-executor";
import type { AgentExecutor } from "./executors/executor";
import { OpenAiCompatibleExecutor } from "./executors/openai-executor";
import { homePaths, type HomePaths } from "./home";
import type { Logger } from "./log";
import type { CallerIdentity } from "./protocol/caller";
import { AuthorizedHandler } from "./protocol/authorized-handler";
import { HttpJsonTransport } from "./protocol/http-json-transport";
import { JsonRpcTransport } from "./protocol/jsonrpc-transport";
import { DefaultRequestHandler } from "./protocol/request-handler";
import type { AgentCard } from "./protocol/types";
import { v1Methods } from "./protocol/v1-methods";
import { v03Methods } from "./protocol/v03/methods";
import { FleetPki } from "./fleet/fleet-pki";
import type { PkiRoutes } from "./fleet/pki-routes";
import { NodeMetrics, type ListenerLoad } from "./metrics/node-metrics";
import { listenAdmin } from "./server/admin-listener";
import { buildAgentCard, buildExtendedCard, DEFAULT_SKILLS, type Binding } from "./server/agent-card";
import { AnswerBudget } from "./server/answer-budget";
import { AuditLog, type AuditCall, type AuditRefusal } from "./server/audit-log";
import type { ConnectionLimits } from "./server/connection-limits";
import { descriptorCheck, descriptorLimit, DescriptorWatch, fitToDescriptors, openDescriptors } from "./server/descriptor-budget";
import { listenerCaps } from "./server/listener-caps";
import { keyOf, RefusalTally, summed } from "./server/refusal-tally";
import { signCardAs } from "./server/card-signing";
import { classify, RefusalLog } from "./server/refusal-log";
import { listenMtls, type Listener, type RefusedPeer } from "./server/mtls-listener";
import { opsRoutes } from "./server/ops-routes";
import { LOOPBACK_CALLER, listenPlainLoopback } from "./server/plain-listener";
import { listenToken } from "./server/token-listener";
import { SqliteCallerTokens } from "./store/sqlite-caller-tokens";
import { PeerRateLimiter, RateLimitLog } from "./server/rate-limit";
import { certificateCheck, checkReadiness, storageCheck } from "./server/readiness";
import { DiskFloor } from "./store/disk-floor";
import { StorageQuota } from "./tasks/storage-quota";
import { createRequestRouter, tooLargeResponse, type RouterMetrics } from "./server/request-router";
import { SqlitePeerRegistry } from "./store/sqlite-peer-registry";
import { isOutsidePeer } from "./peers/peer-registry";
import { openStorage } from "./store/storage";
import { PushDispatcher } from "./push/push-dispatcher";
import { RetentionSweeper } from "./tasks/retention";
import { WebhookGuard } from "./push/ssrf-guard";
import { allOf } from "./tasks/lifecycle";
import { taskLog } from "./tasks/task-log";
import { TaskRunner } from "./tasks/task-runner";
import { VERSION } from "./version";

export interface RunningNode {
  name: string;
  url: string;
  advertisedUrl: string;
  /** The plain loopback listener's URL, when --plain-http-port is set. */
  plainUrl?: string;
  /** The admin port's URL (metrics and health only), when --admin-port is set. */
  adminUrl?: string;
  /** The token listener's URL (callers outside the fleet, bearer tokens), when token_port is set. */
  tokenUrl?: string;
  /** The enrollment port's URL, when enroll_port is set and this home holds the fleet CA. */
  enrollUrl?: string;
  /** Where tasks are kept: the home's SQLite file, or the Postgres database (without its password). */
  database: { kind: "sqlite" | "postgres"; where: string };
  /**
   * Applies what can change without a restart (SIGHUP): the certificate, key and CA are read again from the
   * home and used for new connections; settings marked reloadable take their new values. Says which changed
   * settings need a restart instead.
   */
  reload(next: ServeConfig): Promise<{ applied: string[]; needsRestart: string[] }>;
  stop(): Promise<void>;
}

/**
 * The daemon, assembled top to bottom: identity, database, executor, task runner, protocol, listeners. Each
 * line names the one piece it adds; nothing here knows how the pieces work inside.
 */
export async function startNode(
  home: string,
  config: ServeConfig,
  log: Logger,
  embed: { executor?: AgentExecutor; /** Called once every listener is bound, before the node logs that it serves. */ listening?(node: RunningNode): void } = {},
): Promise<RunningNode> {
  const paths = homePaths(home);
  // Every listener's connection caps, fitted under the file descriptor limit before anything is opened.
  const fds = descriptorLimit();
  const caps = fitToDescriptors(listenerCaps(config), fds);
  const cap = (listener: keyof typeof caps.caps): ConnectionLimits => caps.caps[listener] ?? caps.caps.mtls;
  let identity = await loadNodeIdentity(paths);
  const startedAt = Date.now();
  const storage = await openStorage({ path: paths.database, databaseUrl: config.databaseUrl, maxListBytes: config.maxListBytes, leaseMs: config.leaseMs, log });
  const store = storage.tasks;
  const database = storage.local;
  // Health and the tasks-by-state gauge read the store that holds the tasks (SQLite file or Postgres).
  const storeProbe = storage.health;
  // An embedding program (a benchmark, a test) may bring its own executor; the binary picks one by name.
  const executor = embed.executor ?? createExecutor(config);
  // The metrics read the runner and the listeners, which are made after them (the runner reports into them).
  let runnerRef: TaskRunner | undefined;
  let fleetPkiRef: FleetPki | undefined;
  const loads: (() => ListenerLoad)[] = [];
  const descriptors = new DescriptorWatch({
    onExhausted: (code) =>
      log.error("out of file descriptors: no listener can accept a connection until some close", {
        code,
        limit: descriptors.state().limit ?? fds,
        next: "raise the limit (systemd: LimitNOFILE; a shell: ulimit -n) or lower max_connections",
      }),
    onRecovered: (ms) => log.warn("file descriptors are free again: the listeners accept connections", { exhausted_for_ms: ms }),
  });
  descriptors.start();
  let answersRef: AnswerBudget | undefined;
  let floorRef: DiskFloor | undefined;
  const metrics = new NodeMetrics({
    version: VERSION,
    executor: executor.kind,
    startedAt,
    taskStates: () => storeProbe.countByState(),
    load: () => runnerRef?.load() ?? { running: 0, queued: 0, waitingForInput: 0 },
    listeners: () => loads.map((l) => l()),
    descriptors: () => descriptors.state(),
    certificateNotAfter: () => identity.notAfter,
    revocationList: () => fleetPkiRef?.revocationFacts(),
    answerBytesHeld: () => answersRef?.held() ?? 0,
    diskFloor: () => floorRef?.state(),
  });
  const runner = new TaskRunner(store, executor, {
    maxConcurrent: config.maxConcurrent,
    maxQueued: config.maxQueued,
    callerShare: config.callerShare,
    historyMessages: 50,
    deadlineMs: config.deadlineMs,
    outputCapBytes: config.outputCapBytes,
    maxArtifactBytes: config.maxArtifactBytes,
    maxTaskMessages: config.maxTaskMessages,
    maxMessageParts: config.maxMessageParts,
    maxTaskBytes: config.maxTaskBytes,
    lifecycle: allOf(taskLog(log), metrics),
    leases: storage.leases,
    replicas: storage.replicas,
  });
  runnerRef = runner;
  const pushConfigs = storage.pushConfigs;
  const peers = new SqlitePeerRegistry(database.db);
  const fleetPki = new FleetPki({ paths, identity: () => identity, adopt: (fresh) => (identity = fresh), peers, settings: () => config, log });
  fleetPkiRef = fleetPki;
  const guard = new WebhookGuard({ allowlist: config.pushAllow, fleetHosts: () => new Set(peers.list().filter((p) => !isOutsidePeer(p)).map((p) => new URL(p.url).host)) });
  const dispatcher = new PushDispatcher(storage.deliveries, pushConfigs, {
    guard,
    log,
    concurrency: config.pushConcurrency,
    hostConcurrency: config.pushHostConcurrency,
    callerConcurrency: config.pushCallerConcurrency,
    timeoutMs: config.pushTimeoutMs,
  });
  // Deliveries are queued with their events, in the same commit, and scheduled once it committed; a store
  // that cannot do that has them queued after the commit.
  if (store.onDeliveriesQueued) store.onDeliveriesQueued((deliveries) => dispatcher.scheduleQueued(deliveries));
  else
    runner.onEvent((taskId, item) =>
      dispatcher.notify(taskId, item.response).catch((err) => log.error("could not queue a push notification", { task: taskId, reason: String(err) })),
    );
  await dispatcher.start();
  const retention = new RetentionSweeper(store, { maxAgeMs: config.retentionDays * 86_400_000, forget: (ids) => pushConfigs.deleteForTasks(ids), log });
  retention.start();
  const recovered = await runner.recover();
  if (recovered.resumed + recovered.failed > 0)
    log.warn("found tasks the last stop interrupted", { resumed: recovered.resumed, failed: recovered.failed, policy: executor.onRestart ?? "fail" });
  // With replicas: renew this one's leases, and take over the tasks of replicas that died.
  const stopLeases = runner.keepLeases((err) => log.error("could not renew task leases; trying again", { reason: err instanceof Error ? err.message : String(err) }));
  // What one caller may store (max_caller_bytes, max_caller_tasks) and, on SQLite, the free-space floor behind it.
  const floor = !config.databaseUrl && config.minFreeDisk > 0 ? new DiskFloor(store, { path: paths.database, floorBytes: config.minFreeDisk, log }) : undefined;
  await floor?.start();
  floorRef = floor;
  const quota = new StorageQuota(store, {
    maxCallerBytes: config.maxCallerBytes,
    maxCallerTasks: config.maxCallerTasks,
    floor,
    onRefused: (limit) => metrics.storageRefused(limit),
  });
  // Built on request: the advertised URL is known only once the mTLS listener is bound.
  const extendedCard = config.extendedCard && (() => signed("extended", advertisedUrl));
  // The authorization policy ([[authorize]]) in front of the handler, read at each call so SIGHUP applies it.
  const handler = new AuthorizedHandler(
    new DefaultRequestHandler(store, runner, {
      push: { configs: pushConfigs, guard, limits: { perTask: config.maxPushConfigsPerTask, perCaller: config.maxPushConfigsPerCaller } },
      maxTasksPerContext: config.maxTasksPerContext,
      extendedCard,
      extensions: config.extensions,
      maxTaskMessages: config.maxTaskMessages,
      maxMessageParts: config.maxMessageParts,
      maxTaskBytes: config.maxTaskBytes,
      storage: quota,
    }),
    () => config.authorize,
  );
  const audit = openAuditLog(paths, config, log);
  // Both bindings over one method table, so they validate, scope and answer alike.
  const v1 = v1Methods(handler);
  const transport = new JsonRpcTransport({ v1, v03: v03Methods(handler) });
  const httpJson = new HttpJsonTransport(v1);
  const limiter = new PeerRateLimiter({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst });
  // Answers waiting for clients that have not read them, per caller and in all (see AnswerBudget).
  const answers = new AnswerBudget({ perCaller: config.answerBytesPerCaller, total: config.answerBytesInFlight });
  answersRef = answers;
  const modelReady = async (signal: AbortSignal) =>
    (await executor.ready?.(signal)) ?? { ready: true, detail: `the ${executor.kind} executor needs nothing external` };
  const ops = opsRoutes({
    name: identity.name,
    version: VERSION,
    executor: executor.kind,
    startedAt,
    readiness: () =>
      checkReadiness({
        database: async () => withUnstored(await storeProbe.writable(), runner.unstoredTasks()),
        certificate: () => certificateCheck({ ...identity, revoked: fleetPki.revocations.ownRevocation() }),
        revocation: () => fleetPki.revocationCheck(),
        model: async (signal) => {
          const r = await modelReady(signal);
          return { ok: r.ready, detail: r.detail };
        },
        descriptors: () => descriptorCheck(descriptors.state(), descriptors.state().limit ?? fds, openDescriptors()),
        storage: () => storageCheck(floor?.state(), config.databaseUrl ? "the database is on a Postgres server, whose disk this node cannot see" : "min_free_disk is 0"),
      }),
    metrics: () => metrics.render(),
  });
  const rateLog = new RateLimitLog(log);
  const routerMetrics: RouterMetrics = {
    rpc: (method, seconds, code) => metrics.rpc(method, seconds, code),
    streamOpened: () => metrics.streamOpened(),
    streamClosed: () => metrics.streamClosed(),
    rateLimited: (peer, wait) => {
      metrics.rateLimited(peer);
      rateLog.limited(peer, wait);
    },
  };
  // The fleet PKI's routes (/pki/) only where callers hold a fleet certificate: the mutual-TLS listener.
  // Health and metrics (which name fleet callers) are not for token callers: the token listener leaves them out.
  // Rate-limited calls are refusals too: summed per peer like the rest (see refusal-tally.ts), so a caller in
  // a loop cannot rotate the audit log away either.
  const limitedCalls =
    audit &&
    new RefusalTally<AuditCall>({
      write: (call, repeats) => audit.call(repeats ? { ...call, more: repeats.more, since: repeats.since } : call),
      key: (call) => `${call.peer} ${call.binding}`,
      kind: () => "rate_limited",
    });
  const auditCall = audit && ((call: AuditCall) => (call.outcome === "rate_limited" ? limitedCalls?.add(call) : audit.call(call)));
  const route = (web: ReturnType<typeof lazyWebApp>, pki?: PkiRoutes, withOps = true) =>
    createRequestRouter({ transport, httpJson, web, ops: withOps ? ops : undefined, limiter, metrics: routerMetrics, pki, audit: auditCall, answers });
  // The cards, signed with this node's key and kept until the identity changes: one per listener, by who may
  // call there ("mtls": fleet members, who get the extended card too; "bearer": token callers; "anonymous": the
  // plain loopback listener, no identity), and the extended card for fleet members.
  const signedCards = new Map<string, Promise<AgentCard>>();
  let signedAs = identity;
  const signed = (kind: "mtls" | "bearer" | "anonymous" | "extended", url: string): Promise<AgentCard> => {
    if (signedAs !== identity) {
      signedCards.clear();
      signedAs = identity;
    }
    const key = `${kind} ${url}`;
    let c = signedCards.get(key);
    if (!c) {
      const unsigned = kind === "extended" ? buildExtendedCard(unsignedCard(url, "mtls"), config.extendedCard!) : unsignedCard(url, kind);
      c = signCardAs(unsigned, identity);
      signedCards.set(key, c);
    }
    return c;
  };
  const card = (url: string, kind: "mtls" | "bearer" | "anonymous" = "mtls") => signed(kind, url);
  const unsignedCard = (url: string, kind: "mtls" | "bearer" | "anonymous") =>
    buildAgentCard({
      name: identity.name,
      description: config.description,
      version: VERSION,
      advertisedUrl: url,
      skills: config.skills ?? DEFAULT_SKILLS,
      pushNotifications: true,
      preferredBinding: config.preferredBinding as Binding,
      security: kind === "bearer" ? "bearer" : "mtls",
      // Only fleet members (mutual TLS) are shown the extended card.
      extendedAgentCard: config.extendedCard !== undefined && kind === "mtls",
      extensions: config.extensions,
    });
  const common = {
    maxBodyBytes: config.maxBodyBytes,
    tooLarge: tooLargeResponse,
    onRefusedRequest: (status: number) => metrics.requestRefused(status),
    http: { maxHeadBytes: config.maxHeadBytes, idleTimeoutMs: config.idleTimeoutMs, headTimeoutMs: config.requestTimeoutMs },
  };

  let advertisedUrl = "";
  const refusals = new RefusalLog(log, { detailedPerWindow: config.logRefusalsPerMinute, count: (kind) => metrics.connectionRefused(kind) });
  // The journal hears of refusals at a rate; the audit log records the first of each source and kind in a
  // minute, and sums up the rest, so that no flood can rotate away what it held before.
  const auditRefusals = audit && new RefusalTally<AuditRefusal>({ write: (r, repeats) => audit.refused(summed(r, repeats)), key: keyOf, kind: (r) => r.kind });
  const refused = (reason: string, remote: string | undefined, peer?: RefusedPeer, kind = classify(reason)) => {
    refusals.refused(reason, remote, { kind });
    auditRefusals?.add({ kind, reason, remote, peer: peer?.name, fingerprint: peer?.fingerprint });
  };
  const track = (listener: string, l: Listener, max: ConnectionLimits) =>
    loads.push(() => ({ listener, open: l.openConnections?.() ?? 0, unauthenticated: l.unauthenticatedConnections?.(), max: max.maxConnections }));
  const mtls = await listenMtls({
    ...common,
    host: config.host,
    port: config.port,
    cert: identity.certPem,
    key: identity.keyPem,
    ca: identity.caPem,
    onRequest: route(lazyWebApp(() => card(advertisedUrl), startedAt), fleetPki.routes),
    revoked: fleetPki.revocations.revokedAt,
    answerRevoked: (req, reason, name) => fleetPki.revokedAnswer(req, reason, name),
    onHandshakeError: (err, remote, peer) => refused(err.message, remote, peer),
    onRefusedConnection: (reason, remote) => refused(reason, remote),
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    limits: caps.caps.mtls,
  });
  track("mtls", mtls, caps.caps.mtls);
  advertisedUrl = config.advertiseUrl ?? defaultAdvertisedUrl(identity.sans, identity.name, config.host, mtls.port);
  const listeners: Listener[] = [mtls];
  let enrollUrl: string | undefined;
  if (config.enrollPort !== undefined) {
    const enroll = await fleetPki.openEnrollment({
      host: config.host,
      port: config.enrollPort,
      mtlsPort: mtls.port,
      tooLarge: tooLargeResponse,
      http: common.http,
      handshakeTimeoutMs: config.handshakeTimeoutMs,
      limits: cap("enroll"),
      onHandshakeError: (err, remote) => refused(`enrollment port: ${err.message}`, remote),
      onRefusedConnection: (reason, remote) => refused(`enrollment port: ${reason}`, remote),
      events: {
        enrolled: (e) =>
          auditCall?.({ peer: e.name, fingerprint: e.fingerprint, binding: "enroll", method: "POST /pki/enroll", outcome: "ok", ms: 0 }),
        // Failed enrollments are refusals like the others: the journal at a rate, the audit log summed per source.
        refused: (e) => {
          refusals.refused(e.reason, e.remote, { kind: e.kind, msg: "refused an enrollment", fields: { name: e.name } });
          auditRefusals?.add({ kind: e.kind, reason: e.reason, remote: e.remote, name: e.name });
        },
      },
    });
    if (enroll) {
      listeners.push(enroll);
      track("enroll", enroll, cap("enroll"));
    }
    enrollUrl = enroll?.url;
  }
  let plainUrl: string | undefined;
  if (config.plainHttpPort !== undefined) {
    const plain = await listenPlainLoopback({
      ...common,
      port: config.plainHttpPort,
      onRequest: route(lazyWebApp(() => card(plainUrl as string, "anonymous"), startedAt)),
      maxConnections: cap("plain").maxConnections,
      onRefusedConnection: (reason, remote) => refused(`plain loopback listener: ${reason}`, remote),
    });
    plainUrl = plain.url;
    listeners.push(plain);
    track("plain", plain, cap("plain"));
    log.warn(`plain-HTTP listener open on loopback: any local process can use it, as caller '${LOOPBACK_CALLER.name}'`, { url: plain.url });
  }
  let tokenUrl: string | undefined;
  let tokenListener: Listener | undefined;
  if (config.tokenPort !== undefined) {
    const tokens = new SqliteCallerTokens(database.db);
    const token = await listenToken({
      ...common,
      host: config.tokenHost,
      port: config.tokenPort,
      tls: config.tokenTls === "on" ? { cert: identity.certPem, key: identity.keyPem } : undefined,
      verify: (t) => tokens.verify(t),
      current: () => tokens.list(),
      onDropped: (caller, remote) => refused(`token listener: closed an open connection: the token of '${caller}' was revoked`, remote),
      onRequest: route(lazyWebApp(() => card(tokenCardUrl(tokenUrl as string, advertisedUrl), "bearer"), startedAt), undefined, false),
      onUnauthorized: (reason, remote, kind) => refused(`token listener: ${reason}`, remote, undefined, kind),
      handshakeTimeoutMs: config.handshakeTimeoutMs,
      limits: cap("token"),
      onHandshakeError: (err, remote) => refused(`token listener: ${err.message}`, remote),
      onRefusedConnection: (reason, remote) => refused(`token listener: ${reason}`, remote),
    });
    tokenUrl = token.url;
    tokenListener = token;
    listeners.push(token);
    track("token", token, cap("token"));
    if (config.tokenTls === "on") log.info("token listener open: callers outside the fleet with a bearer token from 'a2a-node tokens add'", { url: token.url });
    else log.warn("token listener open over plain HTTP: bearer tokens cross the network in clear (token_tls = off)", { url: token.url });
  }
  let adminUrl: string | undefined;
  if (config.adminPort !== undefined) {
    const admin = await listenAdmin({
      port: config.adminPort,
      ops: (method, path) => ops(method, path),
      maxConnections: cap("admin").maxConnections,
      onRefusedConnection: (reason, remote) => refused(`admin port: ${reason}`, remote),
    });
    adminUrl = admin.url;
    listeners.push(admin);
    track("admin", admin, cap("admin"));
    log.info("admin port open on loopback: /metrics and /health/* over plain HTTP, nothing else", { url: admin.url });
  }
  const running: RunningNode = {
    name: identity.name,
    url: mtls.url,
    advertisedUrl,
    plainUrl,
    adminUrl,
    tokenUrl,
    enrollUrl,
    database: { kind: storage.postgres ? "postgres" : "sqlite", where: storage.where },
    async reload(next) {
      const applied: string[] = [];
      const needsRestart: string[] = [];
      const fresh = await loadNodeIdentity(paths);
      if (fresh.certPem !== identity.certPem || fresh.keyPem !== identity.keyPem || fresh.caPem !== identity.caPem) {
        if (fresh.name !== identity.name) needsRestart.push(`certificate (its name changed from ${identity.name} to ${fresh.name})`);
        else {
          fleetPki.useIdentity(fresh);
          applied.push("certificate");
        }
      }
      for (const name of Object.keys(SETTINGS) as SettingName[]) {
        if (JSON.stringify(config[name]) === JSON.stringify(next[name])) continue;
        if ((SETTINGS[name] as { reloadable?: boolean }).reloadable) {
          (config as Record<string, unknown>)[name] = next[name];
          applied.push(SETTINGS[name].file);
        } else needsRestart.push(SETTINGS[name].file);
      }
      limiter.configure({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst });
      audit?.reopen();
      // A token revoked since (tokens revoke signals this reload): its open connections and streams end now.
      tokenListener?.dropRevoked?.();
      await fleetPki.refresh();
      return { applied, needsRestart };
    },
    async stop() {
      fleetPki.stop();
      descriptors.stop();
      for (const l of listeners) l.stopAccepting();
      refusals.flush();
      await retention.stop();
      floor?.stop();
      await runner.shutdown(config.shutdownGraceMs);
      stopLeases();
      for (const l of listeners) await l.close();
      auditRefusals?.flush();
      limitedCalls?.flush();
      audit?.close();
      await storage.flush();
      storeProbe.stop();
      await dispatcher.stop();
      await storage.close();
      log.info("stopped", { name: identity.name });
    },
  };
  // Told before the line that says the node serves: whoever waits for that line finds what the hook wrote.
  embed.listening?.(running);
  log.info("serving A2A over mTLS", {
    name: identity.name,
    listen: mtls.url,
    advertised: advertisedUrl,
    executor: executor.kind,
    database: storage.where,
    version: VERSION,
    audit: audit ? auditPath(paths, config) : "off",
    authorization: config.authorize.length ? `${config.authorize.length} [[authorize]] rule(s)` : "none: every fleet member may call everything",
  });
  // A renewed certificate is served on the token listener too (when it speaks TLS).
  fleetPki.start(mtls, tokenListener ? [tokenListener] : []);
  // Said at once, not found out from the first task that fails; not awaited, so the node answers meanwhile.
  if (executor.ready)
    void modelReady(AbortSignal.timeout(3000)).then(
      (r) => r.ready || log.warn("the model endpoint does not answer: tasks will fail until it does", { executor: executor.kind, detail: r.detail }),
      () => {},
    );
  if (caps.lowered)
    log.warn("the file descriptor limit is below what the listeners' connection caps add up to: the caps are lowered to fit", {
      limit: fds,
      needed: caps.needed,
      available: caps.available,
      caps: Object.fromEntries(Object.entries(caps.caps).map(([k, c]) => [k, (c as ConnectionLimits).maxConnections])),
      next: "raise the limit (systemd: LimitNOFILE=65536; a shell: ulimit -n 65536), or lower max_connections to silence this",
    });

  return running;
}

/**
 * The database check, failed while tasks wait to be recovered because their writes could not be stored (see
 * TaskRunner.unstoredTasks): the probe's write may commit while the tasks' writes fail (one table's fault).
 */
function withUnstored(probe: { ok: boolean; detail: string }, unstored: { count: number; reason?: string }): { ok: boolean; detail: string } {
  if (unstored.count === 0) return probe;
  const tasks = unstored.count === 1 ? "1 task" : `${unstored.count} tasks`;
  return {
    ok: false,
    detail: `${probe.detail}; but ${tasks} could not be stored (${unstored.reason}): each is taken up again as after a restart once the database takes its writes`,
  };
}

/** Where the audit log goes: HOME/audit.jsonl unless audit_log names another file (relative: in the home). */
function auditPath(paths: HomePaths, config: ServeConfig): string {
  return config.auditLog === undefined ? paths.auditLog : resolve(paths.root, config.auditLog);
}

function openAuditLog(paths: HomePaths, config: ServeConfig, log: Logger): AuditLog | undefined {
  if (config.auditLog === "off") return undefined;
  const path = auditPath(paths, config);
  try {
    return new AuditLog({
      path,
      maxBytes: config.auditLogMaxBytes,
      keep: config.auditLogKeep,
      onError: (err) => log.error("could not write the audit log; lines are dropped until it works again", { path, reason: err instanceof Error ? err.message : String(err) }),
      onRecovered: (dropped) => log.warn("the audit log is written again", { path, dropped }),
    });
  } catch (err) {
    throw new Error(`cannot open the audit log ${path}: ${(err as Error).message}; make its folder writable, or set audit_log to another file (or to off)`);
  }
}

export function createExecutor(config: ServeConfig): AgentExecutor {
  switch (config.executor) {
    case "echo":
      return new EchoExecutor();
    case "hermes":
      // The keys are read at each call, so a key file SIGHUP read again applies to the next request.
      return new HermesExecutor({
        baseUrl: config.hermesUrl,
        get apiKey() {
          return config.hermesApiKey;
        },
      });
    case "conformance":
      return new ConformanceExecutor();
    case "openai":
      return new OpenAiCompatibleExecutor({
        baseUrl: config.modelUrl,
        model: config.model,
        get apiKey() {
          return config.modelApiKey;
        },
        systemPrompt: config.systemPrompt,
        temperature: config.temperature,
        maxTokens: config.maxTokens,
        historyChars: config.historyChars,
        skills: config.skillModels,
      });
  }
}

/**
 * The web surface (Elysia, OpenAPI) of one listener, built on its first request: the JSON-RPC path never
 * needs it, and not loading it at start keeps the time from launch to the first answered task short.
 */
function lazyWebApp(card: () => Promise<AgentCard>, startedAt: number) {
  let web: Promise<(request: Request, caller: CallerIdentity) => Promise<Response>> | undefined;
  return async (request: Request, caller: CallerIdentity) => {
    web ??= import("./server/web-app").then(({ createWebApp }) => createWebApp({ card, version: VERSION, startedAt }).handle);
    return (await web)(request, caller);
  };
}

/**
 * The token listener's card URL: where it listens, unless it listens on every interface (0.0.0.0, ::), whose
 * address no caller can use; then the mutual-TLS listener's advertised host with the token listener's port.
 */
function tokenCardUrl(listening: string, advertised: string): string {
  const u = new URL(listening);
  if (u.hostname !== "0.0.0.0" && u.hostname !== "[::]") return listening;
  const a = new URL(advertised);
  return `${u.protocol}//${a.host.replace(/:\d+$/, "")}:${u.port}`;
}

/**
 * A URL peers can use that the certificate vouches for: the bound address if the certificate names it,
 * otherwise this machine's host name if the certificate names that, otherwise the node name.
 */
function defaultAdvertisedUrl(sans: string[], name: string, bound: string, port: number): string {
  const wildcard = bound === "0.0.0.0" || bound === "::" || bound === "";
  const host = !wildcard && sans.includes(bound) ? bound : sans.includes(hostname()) ? hostname() : name;
  return `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
