/**
 * Asks a home's running node how it is: GET /health/ready on its own port, over mutual TLS with the node's
 * own certificate (the node is a fleet member like any other caller), expecting the server's certificate
 * to carry the node's own name, so an answer from some other process on that port is not taken for ours.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile, resolveSettings, type ServeConfig } from "../config";
import { homePaths } from "../home";
import { loadNodeIdentity } from "../../pki/identity";
import { mtlsFetch } from "../client/mtls-fetch";
import { dialable, runningNodeState } from "../runtime-state";

export interface NodeHealth {
  url: string;
  /** The node answered and is ready (database writable, certificate valid, model endpoint answering). */
  ready: boolean;
  /** What it said, or why it could not be asked. */
  detail: string;
  /** False when nothing answered at all (not running, or not on that port). */
  answered: boolean;
  /** Each readiness check as the node ran it (database, certificate, model), when it answered. */
  checks?: Partial<Record<"database" | "certificate" | "model", { ok: boolean; detail: string }>>;
}

/** The settings `serve` on this home would use: its config file and the environment given. */
export function homeSettings(home: string, env: Record<string, string | undefined>): ServeConfig {
  return resolveSettings({}, env, loadConfigFile(join(home, "config.toml"), false)).config;
}

/** Where to reach a node listening on `host`: the loopback address when it listens on every interface. */
export function localUrl(host: string, port: number): string {
  const h =
    host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host;
  return `https://${h}:${port}`;
}

/**
 * Asks the home's node for its readiness: where it really listens (HOME/serve.json, which a node started with
 * --port or --host differs from its config in), or, for a node that did not say, where `config` puts it.
 */
export async function nodeHealth(home: string, config: ServeConfig, timeoutMs = 5000): Promise<NodeHealth> {
  const running = runningNodeState(home);
  const url = `${running ? dialable(running.urls.mtls) : localUrl(config.host, config.port)}/health/ready`;
  let identity;
  try {
    identity = await loadNodeIdentity(homePaths(home), { allowExpired: true });
  } catch (err) {
    return { url, ready: false, answered: false, detail: `cannot ask: ${(err as Error).message}` };
  }
  const fetchFn = mtlsFetch(
    { cert: identity.certPem, key: identity.keyPem, ca: identity.caPem },
    { name: identity.name },
  );
  try {
    const res = await fetchFn(url, { signal: AbortSignal.timeout(timeoutMs) });
    // A refusal in words (this node's own certificate revoked: its listener says so) is told as it is.
    const body = (await res.json().catch(() => ({}))) as {
      detail?: string;
      checks?: NodeHealth["checks"];
      error?: { message?: string };
    };
    return {
      url,
      ready: res.status === 200,
      answered: true,
      detail: body.detail ?? body.error?.message ?? `HTTP ${res.status}`,
      checks: body.checks,
    };
  } catch (err) {
    const e = err as { code?: string; name?: string; message?: string };
    const why =
      e.code === "ECONNREFUSED" || e.code === "ConnectionRefused"
        ? "nothing is listening there"
        : e.name === "TimeoutError"
          ? `no answer within ${timeoutMs / 1000} s`
          : (e.message ?? String(err));
    return { url, ready: false, answered: false, detail: why };
  }
}

/** KEY=VALUE lines of an EnvironmentFile (comments, blank lines and quotes as systemd reads them). */
export function readEnvironmentFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(path)) return out;
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]))
      value = value.slice(1, -1);
    out[line.slice(0, eq).trim()] = value;
  }
  return out;
}
