/**
 * What doctor checks over the network: the configured port (free, or held by this home's own running node,
 * which must then answer on it), the model endpoint the executor would use, and each peer over mutual TLS.
 */
import { createServer } from "node:net";
import type { ServeConfig } from "../config";
import type { NodeIdentity } from "../../pki/identity";
import { isOutsidePeer, type Peer, type PeerTrust } from "../peers/peer-registry";
import { outsideFetch } from "../client/outside-fetch";
import { explainFailure } from "../client/connect";
import { expectationOf, mtlsFetch } from "../client/mtls-fetch";
import { homeLockHolder } from "../home-lock";
import { nodeHealth } from "../service/node-health";
import { type Finding, fail, ok, skip, warn } from "./check";
import { CardTrustError, verifyFleetCard } from "../client/card-trust";
import type { AgentCard } from "../protocol/types";

export async function checkPort(home: string, config: ServeConfig, timeoutMs: number): Promise<Finding> {
  const where = `${config.host}:${config.port}`;
  const holder = homeLockHolder(home);
  if (holder !== undefined) {
    const h = await nodeHealth(home, config, timeoutMs);
    if (h.answered)
      return ok("port", `${where} is held by this home's node (PID ${holder}), which answers at ${h.url}`);
    return fail(
      "port",
      `this home's node (PID ${holder}) runs but does not answer at ${h.url}: ${h.detail}`,
      `its settings may differ from this home's config; see its log (journalctl -u a2a-node), or restart it`,
    );
  }
  if (config.port === 0) return ok("port", "port 0: serve takes any free port");
  const r = await tryListen(config.host, config.port);
  if (r === undefined) return ok("port", `${where} is free for 'a2a-node serve'`);
  switch (r) {
    case "EADDRINUSE":
      return fail(
        "port",
        `${where} is in use by another process (not this home's node)`,
        `find it with 'ss -ltnp sport = :${config.port}' and stop it, or set another port (port in config.toml, A2A_NODE_PORT or --port)`,
      );
    case "EACCES":
      return fail("port", `not allowed to listen on ${where}`, "use a port above 1023");
    case "EADDRNOTAVAIL":
      return fail(
        "port",
        `this machine has no address ${config.host}`,
        "set host to one of its addresses, or 0.0.0.0 for all",
      );
    default:
      return fail("port", `cannot listen on ${where}: ${r}`, "check host and port in the configuration");
  }
}

function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** The executor's own readiness probe, as GET /health/ready would run it. */
export async function checkModel(config: ServeConfig, timeoutMs: number): Promise<Finding> {
  if (config.executor === "echo" || config.executor === "conformance")
    return skip("model", `the ${config.executor} executor needs no model endpoint`);
  const { createExecutor } = await import("../executors/executor-factory");
  const executor = createExecutor(config);
  const r = await executor.ready!(AbortSignal.timeout(timeoutMs)).catch((err: Error) => ({
    ready: false,
    detail: err.message,
  }));
  if (r.ready) return ok("model", `${config.executor}: ${r.detail}`);
  const fix =
    config.executor === "openai"
      ? `start the model server (e.g. 'ollama serve'), or point model_url (config.toml, A2A_NODE_MODEL_URL, --model-url) at one; tasks fail until it answers`
      : `start Hermes's API server, or set hermes_url and HERMES_API_KEY; tasks fail until it answers`;
  return fail("model", `${config.executor}: ${r.detail}`, fix);
}

/**
 * Each peer's agent card, fetched over mutual TLS as `send` would: its certificate name and pin, and the card's
 * signature, checked.
 */
export async function checkPeers(peers: Peer[], identity: NodeIdentity, timeoutMs: number): Promise<Finding[]> {
  if (peers.length === 0) return [skip("peers", "no peers registered ('a2a-node peers add NAME URL')")];
  return Promise.all(
    peers.map(async (peer): Promise<Finding> => {
      const check = `peer ${peer.name}`;
      const outside = isOutsidePeer(peer);
      const fetchFn = outside
        ? outsideFetch({ trust: peer.trust as Exclude<PeerTrust, { kind: "fleet" }>, auth: peer.auth })
        : mtlsFetch({ cert: identity.certPem, key: identity.keyPem, ca: identity.caPem }, expectationOf(peer));
      const url = new URL("/.well-known/agent-card.json", peer.url).toString();
      const started = performance.now();
      try {
        const res = await fetchFn(url, {
          headers: { accept: "application/json" },
          signal: AbortSignal.timeout(timeoutMs),
        });
        if (!res.ok)
          return fail(
            check,
            `${peer.url} answered HTTP ${res.status} for its agent card`,
            "is that URL an a2a-node? check it with 'a2a-node peers list'",
          );
        const card = (await res.json()) as AgentCard;
        const ms = Math.round(performance.now() - started);
        if (outside)
          return ok(
            check,
            `${peer.url} answers (outside the fleet): card "${card.name ?? "?"}"${card.version ? ` version ${card.version}` : ""} (${ms} ms)`,
          );
        const answers = `${peer.url} answers over mutual TLS: card "${card.name ?? "?"}"${card.version ? ` version ${card.version}` : ""} (${ms} ms)`;
        try {
          await verifyFleetCard(card, { ca: identity.caPem, name: peer.name });
        } catch (err) {
          if (!(err instanceof CardTrustError)) throw err;
          if (err.reason === "unsigned")
            return warn(
              check,
              `${answers}, but ${err.message}`,
              `send and status refuse it unless unsigned_cards = "accept"; upgrade a2a-node on ${peer.name}`,
            );
          return fail(
            check,
            `${answers}, but ${err.message}`,
            `check ${peer.name} ('a2a-node pki show' there) before sending it anything`,
          );
        }
        return ok(check, `${answers}, signed by ${peer.name}`);
      } catch (err) {
        if ((err as Error).name === "TimeoutError")
          return fail(
            check,
            `${peer.url} did not answer within ${timeoutMs / 1000} s`,
            "check that serve runs there, and the network path and firewall between the machines",
          );
        const baseUrl = new URL(peer.url).origin;
        const why = explainFailure(err, { label: `peer '${peer.name}'`, baseUrl, rpcUrl: peer.url, peer });
        return fail(check, why.message, why.hint ?? "check the peer's URL with 'a2a-node peers list'");
      }
    }),
  );
}
