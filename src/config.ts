import { existsSync, readFileSync, statSync } from "node:fs";
import { UsageError } from "./cli/errors";
import type { AgentSkill } from "./protocol/types";
import { DEFAULT_MODEL, DEFAULT_MODEL_URL } from "./executors/openai-executor";
import { PUSH_DEFAULTS } from "./push/push-dispatcher";
import { DEFAULT_MAX_LIST_BYTES } from "./store/list-budget";

export type ExecutorKind = "echo" | "openai" | "hermes" | "conformance";
export const EXECUTOR_KINDS: readonly ExecutorKind[] = ["echo", "openai", "hermes", "conformance"];

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
  /** Bytes of task JSON one ListTasks response may carry: its page shrinks, or a large task's parts are left out. */
  maxListBytes: number;
  maxConcurrent: number;
  maxQueued: number;
  /** The part (0-1] of the execution slots and of the queue one caller may hold. */
  callerShare: number;
  /** How long SIGTERM waits for running tasks before recording them as interrupted. */
  shutdownGraceMs: number;
  description: string;
  /** Skills listed in the agent card (default: one general "delegate" skill). */
  skills?: AgentSkill[];
  /** Per-skill model settings (from [[skills]] model / system_prompt / temperature), by skill id. */
  skillModels?: Record<string, SkillModel>;
  /** Extra plain-HTTP listener on 127.0.0.1 (conformance runs, local tools); off when undefined. */
  plainHttpPort?: number;
  /** Webhook hosts ("host" or "host:port") allowed even though they are private or loopback addresses. */
  pushAllow: string[];
  /** Webhook requests in flight at once, in all. */
  pushConcurrency: number;
  /** Webhook requests in flight at once to one host name (a slow or black-holing host holds no more). */
  pushHostConcurrency: number;
  /** Webhook requests in flight at once for the webhooks one caller registered (its share). */
  pushCallerConcurrency: number;
  /** One webhook request (DNS lookup included) is given up after this long, then retried later. */
  pushTimeoutMs: number;
  /** A task still running after this long ends FAILED. */
  deadlineMs: number;
  /** Artifact text beyond this is cut and the task marked truncated. */
  outputCapBytes: number;
  /** Tasks one caller may start in one contextId (stops agents delegating to each other forever). */
  maxTasksPerContext: number;
  temperature?: number;
  maxTokens?: number;
  /** Characters of earlier conversation sent to the model with each task. */
  historyChars: number;
  /** Hermes Agent API server, for --executor hermes. */
  hermesUrl: string;
  /** Read from A2A_NODE_HERMES_API_KEY / HERMES_API_KEY or --hermes-api-key-file; never printed. */
  hermesApiKey?: string;
}

export const DEFAULTS: ServeConfig = {
  host: "0.0.0.0",
  port: 9443,
  executor: "openai",
  modelUrl: DEFAULT_MODEL_URL,
  model: DEFAULT_MODEL,
  maxBodyBytes: 1024 * 1024,
  maxListBytes: DEFAULT_MAX_LIST_BYTES,
  maxConcurrent: 4,
  maxQueued: 1000,
  callerShare: 0.75,
  shutdownGraceMs: 10_000,
  description: "An a2a-node agent: delegate tasks to it over mutual TLS.",
  pushAllow: [],
  pushConcurrency: PUSH_DEFAULTS.concurrency,
  pushHostConcurrency: PUSH_DEFAULTS.hostConcurrency,
  pushCallerConcurrency: PUSH_DEFAULTS.callerConcurrency,
  pushTimeoutMs: PUSH_DEFAULTS.timeoutMs,
  deadlineMs: 60 * 60 * 1000,
  outputCapBytes: 1024 * 1024,
  maxTasksPerContext: 100,
  historyChars: 24_000,
  hermesUrl: "http://127.0.0.1:8642",
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
  maxListBytes: "A2A_NODE_MAX_LIST_BYTES",
} as const;

/** What a skill may change about the model call; a task picks its skill with message.metadata.skill. */
export interface SkillModel {
  model?: string;
  systemPrompt?: string;
  temperature?: number;
}

/** What a config file may set (TOML, snake_case keys; see scripts/config.example.toml). */
export type FileConfig = Partial<Omit<ServeConfig, "modelApiKey" | "hermesApiKey">>;

const FILE_KEYS: Record<string, keyof FileConfig> = {
  host: "host",
  port: "port",
  advertise_url: "advertiseUrl",
  executor: "executor",
  model_url: "modelUrl",
  model: "model",
  system_prompt: "systemPrompt",
  max_body: "maxBodyBytes",
  max_list_bytes: "maxListBytes",
  max_concurrent: "maxConcurrent",
  max_queued: "maxQueued",
  caller_share: "callerShare",
  shutdown_grace_seconds: "shutdownGraceMs",
  description: "description",
  skills: "skills",
  plain_http_port: "plainHttpPort",
  push_allow: "pushAllow",
  push_concurrency: "pushConcurrency",
  push_host_concurrency: "pushHostConcurrency",
  push_caller_concurrency: "pushCallerConcurrency",
  push_timeout_seconds: "pushTimeoutMs",
  deadline_seconds: "deadlineMs",
  output_cap: "outputCapBytes",
  max_tasks_per_context: "maxTasksPerContext",
  temperature: "temperature",
  max_tokens: "maxTokens",
  history_chars: "historyChars",
  hermes_url: "hermesUrl",
};

/**
 * Reads a TOML config file. Unknown keys are an error (a typo must not be silently ignored); a missing file
 * is an error only when it was named explicitly.
 */
export function loadConfigFile(path: string, explicit: boolean): FileConfig {
  if (!existsSync(path)) {
    if (explicit) throw new UsageError(`config file ${path} does not exist`);
    return {};
  }
  let raw: Record<string, unknown>;
  try {
    raw = Bun.TOML.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new UsageError(`config file ${path} is not valid TOML: ${(err as Error).message}`);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const key = FILE_KEYS[k];
    if (!key) throw new UsageError(`config file ${path}: unknown key '${k}' (known: ${Object.keys(FILE_KEYS).join(", ")})`);
    out[key] = key === "shutdownGraceMs" || key === "deadlineMs" || key === "pushTimeoutMs" ? Number(v) * 1000 : v;
  }
  if (out.skills !== undefined) {
    out.skillModels = skillModels(out.skills, path);
    out.skills = checkSkills(out.skills, path);
  }
  if (out.pushAllow !== undefined && (!Array.isArray(out.pushAllow) || out.pushAllow.some((h) => typeof h !== "string")))
    throw new UsageError(`config file ${path}: push_allow must be a list of "host" or "host:port" strings`);
  return out as FileConfig;
}

function skillModels(v: unknown, path: string): Record<string, SkillModel> {
  const out: Record<string, SkillModel> = {};
  if (!Array.isArray(v)) return out;
  v.forEach((s, i) => {
    const o = s as Record<string, unknown>;
    const m: SkillModel = {};
    if (o.model !== undefined) {
      if (typeof o.model !== "string" || !o.model) throw new UsageError(`config file ${path}: skills[${i}].model must be a non-empty string`);
      m.model = o.model;
    }
    if (o.system_prompt !== undefined) {
      if (typeof o.system_prompt !== "string") throw new UsageError(`config file ${path}: skills[${i}].system_prompt must be a string`);
      m.systemPrompt = o.system_prompt;
    }
    if (o.temperature !== undefined) {
      if (typeof o.temperature !== "number") throw new UsageError(`config file ${path}: skills[${i}].temperature must be a number`);
      m.temperature = o.temperature;
    }
    if (typeof o.id === "string" && Object.keys(m).length) out[o.id] = m;
  });
  return out;
}

function checkSkills(v: unknown, path: string): AgentSkill[] {
  if (!Array.isArray(v)) throw new UsageError(`config file ${path}: skills must be an array of [[skills]] tables`);
  return v.map((s, i) => {
    const o = s as Record<string, unknown>;
    for (const f of ["id", "name", "description"])
      if (typeof o[f] !== "string" || o[f] === "") throw new UsageError(`config file ${path}: skills[${i}].${f} must be a non-empty string`);
    const tags = o.tags ?? [];
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string")) throw new UsageError(`config file ${path}: skills[${i}].tags must be strings`);
    const skill: AgentSkill = { id: o.id as string, name: o.name as string, description: o.description as string, tags: tags as string[] };
    if (Array.isArray(o.examples)) skill.examples = o.examples.map(String);
    return skill;
  });
}

export interface ServeFlags {
  host?: string;
  port?: number;
  advertiseUrl?: string;
  executor?: string;
  modelUrl?: string;
  model?: string;
  systemPrompt?: string;
  maxBody?: number;
  maxListBytes?: number;
  maxConcurrent?: number;
  maxQueued?: number;
  callerShare?: number;
  description?: string;
  plainHttpPort?: number;
  deadline?: number;
  outputCap?: number;
  maxTasksPerContext?: number;
  temperature?: number;
  maxTokens?: number;
  modelApiKeyFile?: string;
  hermesUrl?: string;
  hermesApiKeyFile?: string;
  pushConcurrency?: number;
  pushHostConcurrency?: number;
  pushCallerConcurrency?: number;
  pushTimeout?: number;
}

/** max_list_bytes: below 16 KiB most tasks would be cut; above 256 MiB one listing could hold a node's memory. */
const MIN_LIST_BYTES = 16 * 1024;
const MAX_LIST_BYTES = 256 * 1024 * 1024;

export function resolveServeConfig(flags: ServeFlags, env: Record<string, string | undefined>, file: FileConfig = {}): ServeConfig {
  const num = (flag: number | undefined, key: string, name: string): number | undefined => {
    if (flag !== undefined) return flag;
    const v = env[key];
    if (v === undefined || v === "") return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new UsageError(`${key} must be a number (got '${v}')`);
    return n;
  };
  const base: ServeConfig = { ...DEFAULTS, ...file };
  const c: ServeConfig = {
    ...base,
    host: flags.host ?? env[ENV_KEYS.host] ?? base.host,
    port: num(flags.port, ENV_KEYS.port, "port") ?? base.port,
    advertiseUrl: flags.advertiseUrl ?? env[ENV_KEYS.advertiseUrl] ?? base.advertiseUrl,
    executor: (flags.executor ?? env[ENV_KEYS.executor] ?? base.executor) as ExecutorKind,
    modelUrl: flags.modelUrl ?? env[ENV_KEYS.modelUrl] ?? base.modelUrl,
    model: flags.model ?? env[ENV_KEYS.model] ?? base.model,
    modelApiKey: flags.modelApiKeyFile ? readKeyFile(flags.modelApiKeyFile) : env.A2A_NODE_MODEL_API_KEY || env.OPENAI_API_KEY || undefined,
    systemPrompt: flags.systemPrompt ?? base.systemPrompt,
    maxBodyBytes: flags.maxBody ?? base.maxBodyBytes,
    maxListBytes: num(flags.maxListBytes, ENV_KEYS.maxListBytes, "max-list-bytes") ?? base.maxListBytes,
    maxConcurrent: num(flags.maxConcurrent, ENV_KEYS.maxConcurrent, "max-concurrent") ?? base.maxConcurrent,
    maxQueued: flags.maxQueued ?? base.maxQueued,
    callerShare: flags.callerShare ?? base.callerShare,
    description: flags.description ?? base.description,
    plainHttpPort: flags.plainHttpPort ?? base.plainHttpPort,
    deadlineMs: flags.deadline !== undefined ? flags.deadline * 1000 : base.deadlineMs,
    outputCapBytes: flags.outputCap ?? base.outputCapBytes,
    maxTasksPerContext: flags.maxTasksPerContext ?? base.maxTasksPerContext,
    temperature: flags.temperature ?? base.temperature,
    maxTokens: flags.maxTokens ?? base.maxTokens,
    hermesUrl: flags.hermesUrl ?? env.A2A_NODE_HERMES_URL ?? base.hermesUrl,
    hermesApiKey: flags.hermesApiKeyFile ? readKeyFile(flags.hermesApiKeyFile) : env.A2A_NODE_HERMES_API_KEY || env.HERMES_API_KEY || undefined,
    pushConcurrency: flags.pushConcurrency ?? base.pushConcurrency,
    pushHostConcurrency: flags.pushHostConcurrency ?? base.pushHostConcurrency,
    pushCallerConcurrency: flags.pushCallerConcurrency ?? base.pushCallerConcurrency,
    pushTimeoutMs: flags.pushTimeout !== undefined ? flags.pushTimeout * 1000 : base.pushTimeoutMs,
  };
  for (const [flag, key, n] of [
    ["--push-concurrency", "push_concurrency", c.pushConcurrency],
    ["--push-host-concurrency", "push_host_concurrency", c.pushHostConcurrency],
    ["--push-caller-concurrency", "push_caller_concurrency", c.pushCallerConcurrency],
  ] as const) {
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError(`${flag} (${key}) must be a whole number 1-1000 (got ${n})`);
  }
  if (!(c.pushTimeoutMs >= 100 && c.pushTimeoutMs <= 300_000))
    throw new UsageError(`--push-timeout (push_timeout_seconds) must be 0.1-300 seconds (got ${c.pushTimeoutMs / 1000})`);
  if (!(c.deadlineMs > 0)) throw new UsageError(`--deadline must be a positive number of seconds`);
  if (!Number.isInteger(c.outputCapBytes) || c.outputCapBytes < 1024) throw new UsageError(`--output-cap must be a whole number of bytes, at least 1024 (got ${c.outputCapBytes})`);
  if (!Number.isInteger(c.maxTasksPerContext) || c.maxTasksPerContext < 1) throw new UsageError(`--max-tasks-per-context must be 1 or more (got ${c.maxTasksPerContext})`);
  if (c.plainHttpPort !== undefined && (!Number.isInteger(c.plainHttpPort) || c.plainHttpPort < 0 || c.plainHttpPort > 65535))
    throw new UsageError(`--plain-http-port must be 0-65535 (got ${c.plainHttpPort})`);
  if (!EXECUTOR_KINDS.includes(c.executor))
    throw new UsageError(`--executor must be one of ${EXECUTOR_KINDS.join(", ")} (got '${c.executor}')`);
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535) throw new UsageError(`--port must be 0-65535 (got ${c.port})`);
  if (!Number.isInteger(c.maxBodyBytes) || c.maxBodyBytes < 1024)
    throw new UsageError(`--max-body must be a whole number of bytes, at least 1024 (got ${c.maxBodyBytes})`);
  if (!Number.isInteger(c.maxListBytes) || c.maxListBytes < MIN_LIST_BYTES || c.maxListBytes > MAX_LIST_BYTES)
    throw new UsageError(`--max-list-bytes (max_list_bytes) must be a whole number of bytes, ${MIN_LIST_BYTES}-${MAX_LIST_BYTES} (got ${c.maxListBytes})`);
  if (!Number.isInteger(c.maxConcurrent) || c.maxConcurrent < 1 || c.maxConcurrent > 10_000)
    throw new UsageError(`--max-concurrent must be 1-10000 (got ${c.maxConcurrent})`);
  if (!Number.isInteger(c.maxQueued) || c.maxQueued < 0) throw new UsageError(`--max-queued must be 0 or more (got ${c.maxQueued})`);
  if (typeof c.callerShare !== "number" || !(c.callerShare > 0 && c.callerShare <= 1))
    throw new UsageError(`--caller-share (caller_share) must be a fraction above 0 and at most 1 (got ${c.callerShare})`);
  for (const [name, url] of [["model-url", c.modelUrl], ["advertise-url", c.advertiseUrl], ["hermes-url", c.hermesUrl]] as const) {
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

/**
 * An API key kept in a file: it must be readable by its owner only (0600), like a private key, and it is
 * never printed.
 */
export function readKeyFile(path: string): string {
  if (!existsSync(path)) throw new UsageError(`API key file ${path} does not exist`);
  if ((statSync(path).mode & 0o077) !== 0) throw new UsageError(`API key file ${path} is readable by others; run: chmod 600 ${path}`);
  const key = readFileSync(path, "utf8").trim();
  if (!key) throw new UsageError(`API key file ${path} is empty`);
  return key;
}

/** The effective configuration for `serve --check`, with secrets shown only as present or absent. */
export function redacted(c: ServeConfig): Record<string, unknown> {
  return { ...c, modelApiKey: c.modelApiKey ? "(set)" : "(not set)", hermesApiKey: c.hermesApiKey ? "(set)" : "(not set)" };
}
