import { hostname } from "node:os";
import { isIP } from "node:net";
import { loadNodeIdentity } from "../pki/identity";
import type { ServeConfig } from "./config";
import { EchoExecutor } from "./executors/echo-executor";
import type { AgentExecutor } from "./executors/executor";
import { OpenAiCompatibleExecutor } from "./executors/openai-executor";
import { homePaths } from "./home";
import type { Logger } from "./log";
import { JsonRpcTransport } from "./protocol/jsonrpc-transport";
import { v1Methods } from "./protocol/v1-methods";
import { DefaultRequestHandler } from "./protocol/request-handler";
import type { CallerIdentity } from "./protocol/caller";
import type { AgentCard } from "./protocol/types";
import { buildAgentCard, DEFAULT_SKILLS } from "./server/agent-card";
import { listenMtls } from "./server/mtls-listener";
import { createRequestRouter, tooLargeResponse } from "./server/request-router";
import { openDatabase } from "./store/database";
import { SqliteTaskStore } from "./store/sqlite-task-store";
import { TaskRunner } from "./tasks/task-runner";
import { VERSION } from "./version";

export interface RunningNode {
  name: string;
  url: string;
  advertisedUrl: string;
  stop(): Promise<void>;
}

/**
 * The daemon, assembled top to bottom: identity, database, executor, task runner, protocol, web surface,
 * listener. Each line names the one piece it adds; nothing here knows how the pieces work inside.
 */
export async function startNode(home: string, config: ServeConfig, log: Logger): Promise<RunningNode> {
  const paths = homePaths(home);
  const identity = await loadNodeIdentity(paths);
  const database = openDatabase(paths.database, { backgroundCheckpoints: true });
  const store = new SqliteTaskStore(database);
  const executor = createExecutor(config);
  const runner = new TaskRunner(store, executor, {
    maxConcurrent: config.maxConcurrent,
    maxQueued: config.maxQueued,
    historyMessages: 20,
  });
  const leftovers = await runner.failLeftovers();
  if (leftovers > 0) log.warn("recorded tasks interrupted by the last stop as FAILED", { count: leftovers });
  const handler = new DefaultRequestHandler(store, runner);
  const transport = new JsonRpcTransport({ v1: v1Methods(handler) });
  let card: AgentCard | undefined; // built once the port is known (port 0 picks one)
  // The web surface (Elysia, OpenAPI) is built on its first request: the JSON-RPC path never needs it, and
  // not loading it at start keeps the time from launch to the first answered task short.
  const startedAt = Date.now();
  let web: Promise<(request: Request, caller: CallerIdentity) => Promise<Response>> | undefined;
  const handleWeb = async (request: Request, caller: CallerIdentity) => {
    web ??= import("./server/web-app").then(({ createWebApp }) => {
      const app = createWebApp({ card: () => card as AgentCard, version: VERSION, executor: executor.kind, startedAt });
      return app.handle;
    });
    return (await web)(request, caller);
  };
  const listener = await listenMtls({
    host: config.host,
    port: config.port,
    cert: identity.certPem,
    key: identity.keyPem,
    ca: identity.caPem,
    maxBodyBytes: config.maxBodyBytes,
    onRequest: createRequestRouter({ transport, web: handleWeb }),
    tooLarge: tooLargeResponse,
    onHandshakeError: (err, remote) => log.warn("refused a TLS client", { remote, reason: err.message }),
  });
  const advertisedUrl = config.advertiseUrl ?? defaultAdvertisedUrl(identity.sans, identity.name, config.host, listener.port);
  card = buildAgentCard({
    name: identity.name,
    description: config.description,
    version: VERSION,
    advertisedUrl,
    skills: DEFAULT_SKILLS,
  });
  log.info("serving A2A over mTLS", {
    name: identity.name,
    listen: listener.url,
    advertised: advertisedUrl,
    executor: executor.kind,
    database: paths.database,
    version: VERSION,
  });

  return {
    name: identity.name,
    url: listener.url,
    advertisedUrl,
    async stop() {
      listener.stopAccepting();
      await runner.shutdown(config.shutdownGraceMs);
      await listener.close();
      store.flush();
      database.close();
      log.info("stopped", { name: identity.name });
    },
  };
}

function createExecutor(config: ServeConfig): AgentExecutor {
  switch (config.executor) {
    case "echo":
      return new EchoExecutor();
    case "openai":
      return new OpenAiCompatibleExecutor({
        baseUrl: config.modelUrl,
        model: config.model,
        apiKey: config.modelApiKey,
        systemPrompt: config.systemPrompt,
      });
  }
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
