import { loadNodeIdentity } from "../pki/identity";
import type { ServeConfig } from "./config";
import type { AgentExecutor } from "./executors/executor";
import { createExecutor } from "./executors/executor-factory";
import { homePaths } from "./home";
import type { Logger } from "./log";
import { AuthorizedHandler } from "./rpc/authorized-handler";
import { HttpJsonTransport } from "./rpc/http-json-transport";
import { GrpcTransport } from "./rpc/grpc-transport";
import { JsonRpcTransport } from "./rpc/jsonrpc-transport";
import { DefaultRequestHandler } from "./rpc/request-handler";
import { v1Methods } from "./rpc/v1-methods";
import { v03Methods } from "./rpc/v03/methods";
import { FleetPki } from "./fleet/fleet-pki";
import { NodeMetrics, type ListenerLoad } from "./metrics/node-metrics";
import { AnswerBudget } from "./server/answer-budget";
import { AuditTrail } from "./server/audit-trail";
import { SignedCards } from "./server/card-signing";
import type { ConnectionLimits } from "./server/connection-limits";
import {
  descriptorCheck,
  descriptorLimit,
  DescriptorWatch,
  fitToDescriptors,
  openDescriptors,
} from "./server/descriptor-budget";
import { listenerCaps } from "./server/listener-caps";
import {
  lazyWebApp,
  openAdminListener,
  openEnrollListener,
  openMtlsListener,
  openPlainListener,
  openTokenListener,
  type ListenerKit,
} from "./server/listeners";
import type { Listener } from "./server/mtls-listener";
import { opsRoutes } from "./server/ops-routes";
import { SqliteCallerTokens } from "./store/sqlite-caller-tokens";
import { PeerRateLimiter, RateLimitLog } from "./server/rate-limit";
import { certificateCheck, checkReadiness, storageCheck } from "./server/readiness";
import { DiskFloor } from "./store/disk-floor";
import { StorageQuota } from "./tasks/storage-quota";
import { createRequestRouter, type RouterMetrics } from "./server/request-router";
import { CallGate } from "./server/call-gate";
import { createGrpcCalls } from "./server/grpc-calls";
import { Http2Handoff } from "./server/http2-handoff";
import { SqlitePeerRegistry } from "./store/sqlite-peer-registry";
import { isOutsidePeer } from "./peers/peer-registry";
import { openStorage } from "./store/storage";
import { PushDispatcher } from "./push/push-dispatcher";
import { RetentionSweeper } from "./tasks/retention";
import { WebhookGuard } from "./push/ssrf-guard";
import { allOf } from "./tasks/lifecycle";
import { taskLog } from "./tasks/task-log";
import { TaskRunner } from "./tasks/task-runner";
import { applyReloadable } from "./settings/reload-diff";
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
 * The daemon, assembled top to bottom: settings, database, identity and fleet PKI, peers, executor, tasks,
 * handler, listeners, ready. Each line names the one piece it adds; nothing here knows how the pieces work inside.
 */
export async function startNode(
  home: string,
  config: ServeConfig,
  log: Logger,
  embed: {
    executor?: AgentExecutor;
    /** Called once every listener is bound, before the node logs that it serves. */ listening?(
      node: RunningNode,
    ): void;
  } = {},
): Promise<RunningNode> {
  const paths = homePaths(home);
  // Every listener's connection caps, fitted under the file descriptor limit before anything is opened.
  const fds = descriptorLimit();
  const caps = fitToDescriptors(listenerCaps(config), fds);
  let identity = await loadNodeIdentity(paths);
  const startedAt = Date.now();
  const storage = await openStorage({
    path: paths.database,
    databaseUrl: config.databaseUrl,
    maxListBytes: config.maxListBytes,
    leaseMs: config.leaseMs,
    durability: config.durability,
    log,
  });
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
    onRecovered: (ms) =>
      log.warn("file descriptors are free again: the listeners accept connections", { exhausted_for_ms: ms }),
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
  const fleetPki = new FleetPki({
    paths,
    identity: () => identity,
    adopt: (fresh) => (identity = fresh),
    peers,
    settings: () => config,
    log,
  });
  fleetPkiRef = fleetPki;
  const guard = new WebhookGuard({
    allowlist: config.pushAllow,
    fleetHosts: () =>
      new Set(
        peers
          .list()
          .filter((p) => !isOutsidePeer(p))
          .map((p) => new URL(p.url).host),
      ),
  });
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
      dispatcher
        .notify(taskId, item.response)
        .catch((err) => log.error("could not queue a push notification", { task: taskId, reason: String(err) })),
    );
  await dispatcher.start();
  const retention = new RetentionSweeper(store, {
    maxAgeMs: config.retentionDays * 86_400_000,
    forget: (ids) => pushConfigs.deleteForTasks(ids),
    log,
  });
  retention.start();
  const recovered = await runner.recover();
  if (recovered.resumed + recovered.failed > 0)
    log.warn("found tasks the last stop interrupted", {
      resumed: recovered.resumed,
      failed: recovered.failed,
      policy: executor.onRestart ?? "fail",
    });
  // With replicas: renew this one's leases, and take over the tasks of replicas that died.
  const stopLeases = runner.keepLeases((err) =>
    log.error("could not renew task leases; trying again", {
      reason: err instanceof Error ? err.message : String(err),
    }),
  );
  // What one caller may store (max_caller_bytes, max_caller_tasks) and, on SQLite, the free-space floor behind it.
  const floor =
    !config.databaseUrl && config.minFreeDisk > 0
      ? new DiskFloor(store, { path: paths.database, floorBytes: config.minFreeDisk, log })
      : undefined;
  await floor?.start();
  floorRef = floor;
  const quota = new StorageQuota(store, {
    maxCallerBytes: config.maxCallerBytes,
    maxCallerTasks: config.maxCallerTasks,
    floor,
    onRefused: (limit) => metrics.storageRefused(limit),
  });
  // Built on request: the advertised URL is known only once the mTLS listener is bound.
  const extendedCard = config.extendedCard && (() => cards.extended(advertisedUrl));
  // The authorization policy ([[authorize]]) in front of the handler, read at each call so SIGHUP applies it.
  const handler = new AuthorizedHandler(
    new DefaultRequestHandler(store, runner, {
      push: {
        configs: pushConfigs,
        guard,
        limits: { perTask: config.maxPushConfigsPerTask, perCaller: config.maxPushConfigsPerCaller },
      },
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
  const audit = new AuditTrail(paths, config, log, (kind) => metrics.connectionRefused(kind));
  // The three bindings over one method table, so they validate, scope and answer alike.
  const v1 = v1Methods(handler);
  const transport = new JsonRpcTransport({ v1, v03: v03Methods(handler) });
  const httpJson = new HttpJsonTransport(v1);
  const grpc = new GrpcTransport(v1);
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
        storage: () =>
          storageCheck(
            floor?.state(),
            config.databaseUrl
              ? "the database is on a Postgres server, whose disk this node cannot see"
              : "min_free_disk is 0",
          ),
      }),
    metrics: () => metrics.exposition(),
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
  // The one gate every A2A call passes, whichever binding carries it: rate limit, answer budget, audit, metrics.
  const gate = new CallGate({ limiter, metrics: routerMetrics, audit: audit.call, answers });
  const route: ListenerKit["route"] = (card, serves) =>
    createRequestRouter({
      transport,
      httpJson,
      web: lazyWebApp(card, startedAt),
      ops: serves.ops ? ops : undefined,
      gate,
      metrics: routerMetrics,
      pki: serves.pki ? fleetPki.routes : undefined,
      audit: audit.call,
    });
  // The gRPC binding: an HTTP/2 server per listener that serves it, over the same method table and gate.
  const http2: ListenerKit["http2"] = () =>
    new Http2Handoff(
      createGrpcCalls({
        transport: grpc,
        gate,
        log,
        maxMessageBytes: config.maxBodyBytes,
        requestTimeoutMs: config.requestTimeoutMs,
      }),
      { idleTimeoutMs: config.idleTimeoutMs, maxHeadBytes: config.maxHeadBytes },
    );
  const cards = new SignedCards(() => identity, config, VERSION);
  const kit: ListenerKit = {
    config,
    log,
    caps: caps.caps,
    audit,
    onRefusedRequest: (status) => metrics.requestRefused(status),
    track: (listener, l, max) =>
      loads.push(() => ({
        listener,
        open: l.openConnections?.() ?? 0,
        unauthenticated: l.unauthenticatedConnections?.(),
        max: max.maxConnections,
      })),
    route,
    card: (url, audience) => cards.card(url, audience),
    http2,
  };
  const mtls = await openMtlsListener(kit, {
    identity,
    revoked: fleetPki.revocations.revokedAt,
    answerRevoked: (req, reason, name) => fleetPki.revokedAnswer(req, reason, name),
  });
  const advertisedUrl = mtls.advertisedUrl;
  const enroll = await openEnrollListener(kit, (opts) => fleetPki.openEnrollment(opts), mtls.listener.port);
  const plain = await openPlainListener(kit);
  const token = await openTokenListener(kit, {
    tokens: () => new SqliteCallerTokens(database.db),
    identity,
    advertisedUrl,
  });
  const admin = await openAdminListener(kit, (method, path) => ops(method, path));
  const tokenListener = token?.listener;
  const listeners: Listener[] = [
    mtls.listener,
    enroll?.listener,
    plain?.listener,
    tokenListener,
    admin?.listener,
  ].filter((l) => l !== undefined);
  const running: RunningNode = {
    name: identity.name,
    url: mtls.url,
    advertisedUrl,
    plainUrl: plain?.url,
    adminUrl: admin?.url,
    tokenUrl: token?.url,
    enrollUrl: enroll?.url,
    database: { kind: storage.postgres ? "postgres" : "sqlite", where: storage.where },
    async reload(next) {
      const applied: string[] = [];
      const needsRestart: string[] = [];
      const fresh = await loadNodeIdentity(paths);
      if (fresh.certPem !== identity.certPem || fresh.keyPem !== identity.keyPem || fresh.caPem !== identity.caPem) {
        if (fresh.name !== identity.name)
          needsRestart.push(`certificate (its name changed from ${identity.name} to ${fresh.name})`);
        else {
          fleetPki.useIdentity(fresh);
          applied.push("certificate");
        }
      }
      const settings = applyReloadable(config, next);
      applied.push(...settings.applied);
      needsRestart.push(...settings.needsRestart);
      limiter.configure({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst });
      audit.reopen();
      // A token revoked since (tokens revoke signals this reload): its open connections and streams end now.
      tokenListener?.dropRevoked?.();
      await fleetPki.refresh();
      return { applied, needsRestart };
    },
    async stop() {
      fleetPki.stop();
      descriptors.stop();
      for (const l of listeners) l.stopAccepting();
      audit.flushJournal();
      await retention.stop();
      floor?.stop();
      await runner.shutdown(config.shutdownGraceMs);
      stopLeases();
      for (const l of listeners) await l.close();
      audit.close();
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
    audit: audit.where,
    authorization: config.authorize.length
      ? `${config.authorize.length} [[authorize]] rule(s)`
      : "none: every fleet member may call everything",
  });
  // A renewed certificate is served on the token listener too (when it speaks TLS).
  fleetPki.start(mtls.listener, tokenListener ? [tokenListener] : []);
  // Said at once, not found out from the first task that fails; not awaited, so the node answers meanwhile.
  if (executor.ready)
    void modelReady(AbortSignal.timeout(3000)).then(
      (r) =>
        r.ready ||
        log.warn("the model endpoint does not answer: tasks will fail until it does", {
          executor: executor.kind,
          detail: r.detail,
        }),
      () => {},
    );
  if (caps.lowered)
    log.warn(
      "the file descriptor limit is below what the listeners' connection caps add up to: the caps are lowered to fit",
      {
        limit: fds,
        needed: caps.needed,
        available: caps.available,
        caps: Object.fromEntries(
          Object.entries(caps.caps).map(([k, c]) => [k, (c as ConnectionLimits).maxConnections]),
        ),
        next: "raise the limit (systemd: LimitNOFILE=65536; a shell: ulimit -n 65536), or lower max_connections to silence this",
      },
    );

  return running;
}

/**
 * The database check, failed while tasks wait to be recovered because their writes could not be stored (see
 * TaskRunner.unstoredTasks): the probe's write may commit while the tasks' writes fail (one table's fault).
 */
function withUnstored(
  probe: { ok: boolean; detail: string },
  unstored: { count: number; reason?: string },
): { ok: boolean; detail: string } {
  if (unstored.count === 0) return probe;
  const tasks = unstored.count === 1 ? "1 task" : `${unstored.count} tasks`;
  return {
    ok: false,
    detail: `${probe.detail}; but ${tasks} could not be stored (${unstored.reason}): each is taken up again as after a restart once the database takes its writes`,
  };
}
