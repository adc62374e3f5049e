import { UsageError } from "./cli/errors";
import { DEFAULT_MODEL, DEFAULT_MODEL_URL } from "./executors/openai-executor";

export type ExecutorKind = "echo" | "openai";
export const EXECUTOR_KINDS: readonly ExecutorKind[] = ["echo", "openai"];

/** Everything `serve` needs. One schema, filled in one order: defaults < environment < flags. */
export interface ServeConfig {
  host: string;
  port: number;
  /** Base URL written in the agent card; by default one that this node's certificate covers. */
  advertiseUrl?: string;
  executor: ExecutorKind;
  modelUrl: string;
  model: string;
  /** Read from the environment (A2A_NODE_MODEL_API_KEY or OPENAI_API_KEY); never printed. */
  modelApiKey?: string;
  systemPrompt?: string;
  maxBodyBytes: number;
  maxConcurrent: number;
  maxQueued: number;
  /** How long SIGTERM waits for running tasks before recording them as interrupted. */
  shutdownGraceMs: number;
  description: string;
}

export const DEFAULTS: ServeConfig = {
  host: "0.0.0.0",
  port: 9443,
  executor: "openai",
  modelUrl: DEFAULT_MODEL_URL,
  model: DEFAULT_MODEL,
  maxBodyBytes: 1024 * 1024,
  maxConcurrent: 4,
  maxQueued: 1000,
  shutdownGraceMs: 10_000,
  description: "An a2a-node agent: delegate tasks to it over mutual TLS.",
};

/** Environment variables, each the same as its flag. */
export const ENV_KEYS = {
  host: "A2A_NODE_HOST",
  port: "A2A_NODE_PORT",
  advertiseUrl: "A2A_NODE_ADVERTISE_URL",
  executor: "A2A_NODE_EXECUTOR",
  modelUrl: "A2A_NODE_MODEL_URL",
  model: "A2A_NODE_MODEL",
  maxConcurrent: "A2A_NODE_MAX_CONCURRENT",
} as const;

export interface ServeFlags {
  host?: string;
  port?: number;
  advertiseUrl?: string;
  executor?: string;
  modelUrl?: string;
  model?: string;
  systemPrompt?: string;
  maxBody?: number;
  maxConcurrent?: number;
  maxQueued?: number;
  description?: string;
}

export function resolveServeConfig(flags: ServeFlags, env: Record<string, string | undefined>): ServeConfig {
  const num = (flag: number | undefined, key: string, name: string): number | undefined => {
    if (flag !== undefined) return flag;
    const v = env[key];
    if (v === undefined || v === "") return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new UsageError(`${key} must be a number (got '${v}')`);
    return n;
  };
  const c: ServeConfig = {
    ...DEFAULTS,
    host: flags.host ?? env[ENV_KEYS.host] ?? DEFAULTS.host,
    port: num(flags.port, ENV_KEYS.port, "port") ?? DEFAULTS.port,
    advertiseUrl: flags.advertiseUrl ?? env[ENV_KEYS.advertiseUrl],
    executor: (flags.executor ?? env[ENV_KEYS.executor] ?? DEFAULTS.executor) as ExecutorKind,
    modelUrl: flags.modelUrl ?? env[ENV_KEYS.modelUrl] ?? DEFAULTS.modelUrl,
    model: flags.model ?? env[ENV_KEYS.model] ?? DEFAULTS.model,
    modelApiKey: env.A2A_NODE_MODEL_API_KEY || env.OPENAI_API_KEY || undefined,
    systemPrompt: flags.systemPrompt,
    maxBodyBytes: flags.maxBody ?? DEFAULTS.maxBodyBytes,
    maxConcurrent: num(flags.maxConcurrent, ENV_KEYS.maxConcurrent, "max-concurrent") ?? DEFAULTS.maxConcurrent,
    maxQueued: flags.maxQueued ?? DEFAULTS.maxQueued,
    description: flags.description ?? DEFAULTS.description,
  };
  if (!EXECUTOR_KINDS.includes(c.executor))
    throw new UsageError(`--executor must be one of ${EXECUTOR_KINDS.join(", ")} (got '${c.executor}')`);
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535) throw new UsageError(`--port must be 0-65535 (got ${c.port})`);
  if (!Number.isInteger(c.maxBodyBytes) || c.maxBodyBytes < 1024)
    throw new UsageError(`--max-body must be a whole number of bytes, at least 1024 (got ${c.maxBodyBytes})`);
  if (!Number.isInteger(c.maxConcurrent) || c.maxConcurrent < 1 || c.maxConcurrent > 10_000)
    throw new UsageError(`--max-concurrent must be 1-10000 (got ${c.maxConcurrent})`);
  if (!Number.isInteger(c.maxQueued) || c.maxQueued < 0) throw new UsageError(`--max-queued must be 0 or more (got ${c.maxQueued})`);
  for (const [name, url] of [["model-url", c.modelUrl], ["advertise-url", c.advertiseUrl]] as const) {
    if (url === undefined) continue;
    try {
      const u = new URL(url);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
    } catch {
      throw new UsageError(`--${name} must be an http(s) URL (got '${url}')`);
    }
  }
  return c;
}

/** The effective configuration for `serve --check`, with secrets shown only as present or absent. */
export function redacted(c: ServeConfig): Record<string, unknown> {
  return { ...c, modelApiKey: c.modelApiKey ? "(set)" : "(not set)" };
}
