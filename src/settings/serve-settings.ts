/**
 * Every setting of `serve`, declared once. The config type, the defaults, the config-file keys, the
 * environment variables, the flags, `serve --help`, `serve --check` and the example config's key list all
 * come from this table (test/config.test.ts checks that they agree).
 */
import { DEFAULT_MODEL, DEFAULT_MODEL_URL } from "../executors/openai-executor";
import { LOG_FORMATS, LOG_LEVELS } from "../log";
import { PUSH_DEFAULTS } from "../push/push-dispatcher";
import { CONNECTION_DEFAULTS } from "../server/connection-limits";
import { HTTP_DEFAULTS } from "../server/http1";
import { RATE_LIMIT_DEFAULTS } from "../server/rate-limit";
import { DEFAULT_MAX_LIST_BYTES } from "../store/list-budget";
import { databaseUrl, list, number, secret, seconds, SettingProblem, table, text, url, type Setting, type SettingGroup } from "./kinds";
import { redactUrl } from "../store/postgres/url";
import { readSkills, type SkillSetting } from "./skills";
import { readAuthorization } from "./authorization";
import type { AccessRule } from "../protocol/access-policy";
import { readExtendedCard, type ExtendedCardSetting } from "./extended-card";
import { readExtensions } from "./extensions";
import type { AgentExtension } from "../protocol/types";

export type ExecutorKind = "echo" | "openai" | "hermes" | "conformance";
export const EXECUTOR_KINDS: readonly ExecutorKind[] = ["echo", "openai", "hermes", "conformance"];

const MIB = 1024 * 1024;

/** "host" or "host:port", as a webhook URL's host would be written. */
function hostEntry(v: string): string {
  if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(v)) throw new SettingProblem(`entries must be "host" or "host:port" (got '${v}')`);
  return v.toLowerCase();
}

export const SETTINGS = {
  // Where to listen and how peers find this node.
  host: text({ file: "host", value: "ADDR", group: "listen", default: "0.0.0.0", nonEmpty: true, doc: "address to listen on (0.0.0.0: every interface); peers connect with mutual TLS only" }),
  port: number({ file: "port", value: "PORT", group: "listen", default: 9443, min: 0, max: 65535, integer: true, doc: "port for mutual-TLS A2A (0: any free port)" }),
  advertiseUrl: url({
    file: "advertise_url",
    value: "URL",
    group: "listen",
    default: undefined,
    doc: "base URL written in the agent card (default: the bound address, the host name or the node name, whichever the certificate covers)",
  }),
  plainHttpPort: number({
    file: "plain_http_port",
    value: "PORT",
    group: "listen",
    default: undefined,
    min: 0,
    max: 65535,
    integer: true,
    doc: "also serve plain HTTP on 127.0.0.1:PORT (loopback only, no identity: every caller is '@local'), for local tools and the A2A conformance kit; leave unset in production",
  }),
  tokenPort: number({
    file: "token_port",
    value: "PORT",
    group: "listen",
    default: undefined,
    min: 0,
    max: 65535,
    integer: true,
    doc: "also serve A2A to callers outside the fleet on PORT, each proving who it is with a bearer token from 'a2a-node tokens add NAME' (caller 'token:NAME'); off when unset",
  }),
  tokenHost: text({
    file: "token_host",
    value: "ADDR",
    group: "listen",
    default: "127.0.0.1",
    nonEmpty: true,
    doc: "address the token listener (token_port) binds; 0.0.0.0 for every interface",
  }),
  tokenTls: text({
    file: "token_tls",
    value: "on|off",
    group: "listen",
    default: "on",
    choices: ["on", "off"],
    doc: "on: the token listener speaks TLS with this node's certificate (callers must trust the fleet CA; no client certificate is asked); off: plain HTTP, tokens in clear (serve --check warns)",
  }),
  adminPort: number({
    file: "admin_port",
    value: "PORT",
    group: "listen",
    default: undefined,
    min: 0,
    max: 65535,
    integer: true,
    doc: "also serve /metrics and /health/* (nothing else: no A2A) over plain HTTP on 127.0.0.1:PORT, for a local Prometheus or health checker without a client certificate; off when unset",
  }),

  // What runs incoming tasks.
  executor: text({
    file: "executor",
    value: "KIND",
    group: "executor",
    default: "openai" as string,
    choices: EXECUTOR_KINDS,
    doc: "what runs tasks: openai (an OpenAI-compatible model server: Ollama, llama.cpp, vLLM, LM Studio), hermes (a Hermes Agent, runs API; approvals become input-required), echo (answers with the task's own text), conformance (as the A2A conformance kit expects)",
  }),
  modelUrl: url({ file: "model_url", value: "URL", group: "executor", default: DEFAULT_MODEL_URL, doc: "OpenAI-compatible API base (Ollama's by default; llama.cpp server: http://127.0.0.1:8080/v1)" }),
  model: text({ file: "model", value: "NAME", group: "executor", default: DEFAULT_MODEL, nonEmpty: true, doc: "model name sent to it" }),
  modelApiKey: secret({
    file: "model_api_key_file",
    flag: "model-api-key-file",
    env: ["A2A_NODE_MODEL_API_KEY", "OPENAI_API_KEY"],
    value: "FILE",
    group: "executor",
    reloadable: true,
    doc: "read the model API key from FILE (mode 0600), else from the environment; never printed; SIGHUP reads the file again",
  }),
  systemPrompt: text({ file: "system_prompt", value: "TEXT", group: "executor", default: undefined, doc: "system prompt sent to the model" }),
  temperature: number({ file: "temperature", value: "T", group: "executor", default: undefined, min: 0, max: 2, doc: "sampling temperature sent to the model" }),
  maxTokens: number({ file: "max_tokens", value: "N", group: "executor", default: undefined, min: 1, max: 10_000_000, integer: true, doc: "answer length limit sent to the model" }),
  historyChars: number({
    file: "history_chars",
    value: "N",
    group: "executor",
    default: 24_000,
    min: 0,
    max: 10_000_000,
    integer: true,
    doc: "characters of earlier conversation sent to the model with each task (oldest dropped first)",
  }),
  hermesUrl: url({ file: "hermes_url", value: "URL", group: "executor", default: "http://127.0.0.1:8642", doc: "Hermes Agent API server, for --executor hermes" }),
  hermesApiKey: secret({
    file: "hermes_api_key_file",
    flag: "hermes-api-key-file",
    env: ["A2A_NODE_HERMES_API_KEY", "HERMES_API_KEY"],
    value: "FILE",
    group: "executor",
    reloadable: true,
    doc: "read the Hermes API key from FILE (mode 0600), else from the environment; never printed; SIGHUP reads the file again",
  }),

  // How much work the node takes on.
  maxBodyBytes: number({ file: "max_body", value: "BYTES", group: "limits", default: MIB, min: 1024, max: 1024 * MIB, integer: true, doc: "largest request body accepted; larger requests get HTTP 413" }),
  maxListBytes: number({
    file: "max_list_bytes",
    value: "BYTES",
    group: "limits",
    default: DEFAULT_MAX_LIST_BYTES,
    // Below 16 KiB most tasks would be cut; above 256 MiB one listing could hold much of a node's memory.
    min: 16 * 1024,
    max: 256 * MIB,
    integer: true,
    doc: "most bytes of tasks in one ListTasks answer: its page holds fewer tasks, and a task larger than this alone comes with its artifacts (then history) left out, noted in its metadata as a2a-node/omitted (GetTask returns it whole)",
  }),
  maxHeadBytes: number({
    file: "max_head_bytes",
    flag: "max-head",
    value: "BYTES",
    group: "limits",
    default: HTTP_DEFAULTS.maxHeadBytes,
    min: 1024,
    max: 1024 * 1024,
    integer: true,
    doc: "largest request head (request line and headers) accepted; larger ones get HTTP 431",
  }),
  idleTimeoutMs: seconds({
    file: "idle_timeout_seconds",
    flag: "idle-timeout",
    value: "SECONDS",
    group: "limits",
    default: HTTP_DEFAULTS.idleTimeoutMs,
    min: 1,
    max: 3600,
    doc: "a connection with no request in progress is closed after this",
  }),
  requestTimeoutMs: seconds({
    file: "request_timeout_seconds",
    flag: "request-timeout",
    value: "SECONDS",
    group: "limits",
    default: HTTP_DEFAULTS.headTimeoutMs,
    min: 1,
    max: 3600,
    doc: "a request must arrive whole (head and body) within this once it has begun, or it gets HTTP 408 and the connection is closed (slow-loris guard)",
  }),
  handshakeTimeoutMs: seconds({
    file: "handshake_timeout_seconds",
    flag: "handshake-timeout",
    value: "SECONDS",
    group: "limits",
    default: CONNECTION_DEFAULTS.handshakeTimeoutMs,
    min: 1,
    max: 120,
    doc: "a client that has not finished its TLS handshake after this is dropped",
  }),
  maxConnections: number({
    file: "max_connections",
    value: "N",
    group: "limits",
    default: CONNECTION_DEFAULTS.maxConnections,
    min: 1,
    max: 1_000_000,
    integer: true,
    doc: "connections each listener holds open at once, handshakes in progress included (lowered at start to fit the file descriptor limit); more are closed at once",
  }),
  maxConnectionsPerAddress: number({
    file: "max_connections_per_address",
    value: "N",
    group: "limits",
    default: CONNECTION_DEFAULTS.maxConnectionsPerAddress,
    min: 1,
    max: 1_000_000,
    integer: true,
    doc: "of those, at most N from one source (an IPv4 address; an IPv6 /64, which one host can hold whole), so one client's flood leaves room for the others",
  }),
  maxHandshakes: number({
    file: "max_handshakes",
    value: "N",
    group: "limits",
    default: undefined,
    min: 1,
    max: 1_000_000,
    integer: true,
    doc: "of those, at most N not authenticated yet (a TLS handshake in progress; on the token listener, no valid token yet; every connection of the enrollment port); unset: as many as max_connections. With the listener full (or holding N), a new connection takes the place of the oldest unauthenticated one of the source holding the most, so strangers cannot keep fleet members out",
  }),
  logRefusalsPerMinute: number({
    file: "log_refusals_per_minute",
    value: "N",
    group: "daemon",
    default: 10,
    min: 0,
    max: 1_000_000,
    integer: true,
    doc: "refused connections (failed handshakes, foreign or revoked certificates, over the limits) logged one by one each minute; the rest are counted by kind in one line",
  }),
  rateLimitPerSecond: number({
    file: "rate_limit_per_second",
    value: "N",
    group: "limits",
    default: RATE_LIMIT_DEFAULTS.perSecond,
    min: 0,
    max: 1_000_000,
    reloadable: true,
    doc: "A2A requests one peer may make per second, on average (token bucket; 0: no limit); past it the peer gets HTTP 429 with Retry-After and a JSON-RPC error; SIGHUP applies a change",
  }),
  rateLimitBurst: number({
    file: "rate_limit_burst",
    value: "N",
    group: "limits",
    default: RATE_LIMIT_DEFAULTS.burst,
    min: 1,
    max: 1_000_000,
    integer: true,
    reloadable: true,
    doc: "A2A requests one peer may make at once before the per-second rate applies (the bucket's size); SIGHUP applies a change",
  }),
  maxConcurrent: number({ file: "max_concurrent", value: "N", group: "limits", default: 4, min: 1, max: 10_000, integer: true, doc: "tasks executing at once" }),
  maxQueued: number({ file: "max_queued", value: "N", group: "limits", default: 1000, min: 0, max: 1_000_000, integer: true, doc: "tasks waiting for a slot; beyond this new tasks are refused (\"retry later\")" }),
  callerShare: number({
    file: "caller_share",
    value: "FRACTION",
    group: "limits",
    default: 0.75,
    min: 0,
    above: true,
    max: 1,
    doc: "the part of those slots and of that queue one caller may hold, so one peer's stuck tasks cannot lock the others out; waiting callers take turns",
  }),
  shutdownGraceMs: seconds({
    file: "shutdown_grace_seconds",
    flag: "shutdown-grace",
    value: "SECONDS",
    group: "limits",
    default: 10_000,
    min: 0,
    max: 3600,
    doc: "on SIGTERM, how long running tasks get before they are recorded as interrupted",
  }),
  deadlineMs: seconds({ file: "deadline_seconds", flag: "deadline", value: "SECONDS", group: "limits", default: 3_600_000, min: 1, max: 30 * 86_400, doc: "a task still running after this ends FAILED" }),
  outputCapBytes: number({
    file: "output_cap",
    value: "BYTES",
    group: "limits",
    default: MIB,
    min: 1024,
    max: 1024 * MIB,
    integer: true,
    doc: "bytes of artifact text; beyond it the answer is cut and the task marked truncated",
  }),
  maxTasksPerContext: number({
    file: "max_tasks_per_context",
    value: "N",
    group: "limits",
    default: 100,
    min: 1,
    max: 1_000_000,
    integer: true,
    doc: "tasks one caller may start in one conversation (stops two agents delegating to each other forever)",
  }),
  maxArtifactBytes: number({
    file: "max_artifact_bytes",
    value: "BYTES",
    group: "limits",
    default: 16 * MIB,
    min: 1024,
    max: 1024 * MIB,
    integer: true,
    doc: "bytes a task's artifacts may hold, every chunk and part counted (text, raw as base64, data as JSON, URLs, metadata); an executor's output past it is not kept and the task ends FAILED saying so",
  }),
  maxTaskMessages: number({
    file: "max_task_messages",
    value: "N",
    group: "limits",
    default: 100,
    min: 3,
    max: 100_000,
    integer: true,
    doc: "messages one task's history may hold (callers' messages, the agent's questions and final message); a message past it gets -32602, an agent's question past it ends the task FAILED",
  }),
  maxMessageParts: number({
    file: "max_message_parts",
    value: "N",
    group: "limits",
    default: 100,
    min: 1,
    max: 100_000,
    integer: true,
    doc: "parts one message may have; a caller's message with more gets -32602, an agent's reply with more ends its task FAILED",
  }),
  retentionDays: number({
    file: "retention_days",
    value: "DAYS",
    group: "limits",
    default: 30,
    min: 0,
    max: 36_500,
    doc: "finished tasks (and their events and webhooks) older than this are deleted in the background, in small batches; 0 keeps them forever",
  }),

  // Push-notification webhooks.
  pushAllow: list({
    file: "push_allow",
    value: "HOST[:PORT]",
    group: "webhooks",
    default: [],
    item: hostEntry,
    doc: "webhook hosts allowed although their address is private, loopback or special-purpose (the SSRF guard refuses those unless they are a fleet peer)",
  }),
  pushConcurrency: number({ file: "push_concurrency", value: "N", group: "webhooks", default: PUSH_DEFAULTS.concurrency, min: 1, max: 1000, integer: true, doc: "webhook requests in flight at once, in all" }),
  pushHostConcurrency: number({
    file: "push_host_concurrency",
    value: "N",
    group: "webhooks",
    default: PUSH_DEFAULTS.hostConcurrency,
    min: 1,
    max: 1000,
    integer: true,
    doc: "of those, at most N to one webhook host: a slow or unanswering host cannot take every slot",
  }),
  pushCallerConcurrency: number({
    file: "push_caller_concurrency",
    value: "N",
    group: "webhooks",
    default: PUSH_DEFAULTS.callerConcurrency,
    min: 1,
    max: 1000,
    integer: true,
    doc: "of those, at most N for the webhooks of one caller; free slots go to the callers in turn",
  }),
  pushTimeoutMs: seconds({
    file: "push_timeout_seconds",
    flag: "push-timeout",
    value: "SECONDS",
    group: "webhooks",
    default: PUSH_DEFAULTS.timeoutMs,
    min: 0.1,
    max: 300,
    doc: "one webhook request (DNS lookup included) is given up after this, then retried with backoff",
  }),

  // What peers see in the agent card.
  description: text({ file: "description", value: "TEXT", group: "card", default: "An a2a-node agent: delegate tasks to it over mutual TLS.", doc: "description in the agent card" }),
  preferredBinding: text({
    file: "preferred_binding",
    value: "BINDING",
    group: "card",
    default: "JSONRPC" as string,
    choices: ["JSONRPC", "HTTP+JSON"],
    doc: "the A2A binding the agent card lists first, which clients that speak both use: JSONRPC or HTTP+JSON (both are always served)",
  }),
  skills: table<SkillSetting[] | undefined>({
    file: "skills",
    value: "[[skills]]",
    group: "card",
    default: undefined,
    read: readSkills,
    doc: "skills listed in the agent card, each optionally with its own model, system_prompt and temperature (config file only)",
  }),
  extendedCard: table<ExtendedCardSetting | undefined>({
    file: "extended_card",
    value: "[extended_card]",
    group: "card",
    default: undefined,
    read: readExtendedCard,
    doc: "an extended agent card for fleet members (GetExtendedAgentCard over mutual TLS): a description and [[extended_card.skills]] (as [[skills]]) added to the public card; the public card then says capabilities.extendedAgentCard (config file only)",
  }),
  extensions: table<AgentExtension[] | undefined>({
    file: "extensions",
    value: "[[extensions]]",
    group: "card",
    default: undefined,
    read: readExtensions,
    doc: "A2A extensions declared in the card (uri, description, required, params): a client activates one with the A2A-Extensions header, the node echoes the ones activated and hands them to the executor; a required one missing from a message gets -32008 (config file only)",
  }),

  // The fleet PKI: where the CA node is, how often its revocation list is fetched, the enrollment port.
  enrollPort: number({
    file: "enroll_port",
    value: "PORT",
    group: "pki",
    default: undefined,
    min: 0,
    max: 65535,
    integer: true,
    doc: "on the node holding the fleet CA: also listen on PORT (TLS, no client certificate) for machines joining with a token from 'pki token' ('a2a-node join'); only enrollment is served there",
  }),
  caPeer: text({
    file: "ca_peer",
    value: "PEER",
    group: "pki",
    default: undefined,
    nonEmpty: true,
    reloadable: true,
    doc: "the registered peer that holds the fleet CA: its revocation list is fetched from it over mutual TLS (unset: only HOME/certs/crl.pem, from pki revoke or pki import-crl, is enforced)",
  }),
  caPassphrase: secret({
    file: "ca_passphrase_file",
    flag: "ca-passphrase-file",
    env: ["A2A_NODE_CA_PASSPHRASE"],
    value: "FILE",
    group: "pki",
    doc: "on the CA node, when secrets/ca.key is encrypted: read its passphrase from FILE (mode 0600), else from the environment; needed to renew, enroll and revoke; never printed",
  }),
  unsignedCards: text({
    file: "unsigned_cards",
    value: "WHAT",
    group: "pki",
    default: "refuse" as string,
    choices: ["refuse", "accept"],
    doc: "what the client commands (send, status, cancel, tasks, peers add --pin, discover, ping) do with a fleet peer's agent card that carries no signature: refuse it, or accept it with a warning (for peers older than signed cards). A signature that does not verify is refused either way",
  }),
  crlRefreshMs: seconds({
    file: "crl_refresh_seconds",
    flag: "crl-refresh",
    value: "SECONDS",
    group: "pki",
    default: 300_000,
    min: 1,
    max: 86_400,
    reloadable: true,
    doc: "how often the revocation list is read again from HOME/certs/crl.pem and fetched from ca_peer; SIGHUP does it at once",
  }),

  // Who may call what, and the record of every call.
  authorize: table<AccessRule[]>({
    file: "authorize",
    value: "[[authorize]]",
    group: "access",
    default: [],
    read: readAuthorization,
    reloadable: true,
    doc: "who may call what: each [[authorize]] table lets its peers (fleet names, \"*\": any member) call its methods (A2A v1.0 names, \"*\": all) and, if it lists skills, send messages only for those (message.metadata.skill); none: every fleet member may call everything; a refused call gets PERMISSION_DENIED (JSON-RPC -32000, HTTP 403); the plain loopback listener is not subject to it; SIGHUP applies a change (config file only)",
  }),
  auditLog: text({
    file: "audit_log",
    value: "PATH",
    group: "access",
    default: undefined,
    nonEmpty: true,
    doc: "the audit log: one JSON line per A2A call (peer, certificate fingerprint, method, task id, outcome, duration; never message content) and per refused connection (and why); default HOME/audit.jsonl, a relative path is in HOME; off: none",
  }),
  auditLogMaxBytes: number({
    file: "audit_log_max_bytes",
    value: "BYTES",
    group: "access",
    default: 10 * MIB,
    min: 1024,
    max: 1024 * 1024 * MIB,
    integer: true,
    doc: "the audit log is rotated before it grows past this: audit.jsonl becomes audit.jsonl.1, .1 becomes .2, and so on",
  }),
  auditLogKeep: number({
    file: "audit_log_keep",
    value: "N",
    group: "access",
    default: 5,
    min: 0,
    max: 1000,
    integer: true,
    doc: "rotated audit log files kept (audit.jsonl.1 to .N); older ones are deleted",
  }),

  // The daemon itself.
  databaseUrl: databaseUrl({
    file: "database_url",
    flag: "database",
    value: "URL",
    group: "daemon",
    redact: redactUrl,
    doc: "keep tasks in this Postgres database (postgres://user:password@host/db) instead of the home's SQLite file, so several replicas of one agent share them; the password is never printed",
  }),
  leaseMs: seconds({
    file: "lease_seconds",
    flag: "lease",
    value: "SECONDS",
    group: "daemon",
    default: 30_000,
    min: 0.5,
    max: 3600,
    doc: "with database_url: how long a replica's hold on the tasks it runs lasts unrenewed (renewed every third of it); when a replica dies, another takes its tasks over after this, as the executor's restart policy says",
  }),
  logLevel: text({
    file: "log_level",
    value: "LEVEL",
    group: "daemon",
    default: "info" as string,
    choices: LOG_LEVELS,
    reloadable: true,
    doc: "least important log lines written: info, warn or error (--quiet: warn); SIGHUP applies a change",
  }),
  logFormat: text({
    file: "log_format",
    value: "FORMAT",
    group: "daemon",
    default: "auto" as string,
    choices: LOG_FORMATS,
    doc: "log lines on stdout as json (one object per line: time, level, msg, fields; for journald and log shippers) or text; auto: text on a terminal, json otherwise",
  }),
} satisfies Record<string, Setting<unknown>>;

export type SettingName = keyof typeof SETTINGS;

/** The value type of each setting, as the table declares it. */
export type SettingValues = { -readonly [K in SettingName]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never };

/** Headings of `serve --help`, in order. */
export const GROUPS: Record<SettingGroup, string> = {
  listen: "LISTENING",
  executor: "EXECUTOR (what runs tasks)",
  limits: "LIMITS",
  webhooks: "PUSH-NOTIFICATION WEBHOOKS",
  card: "AGENT CARD",
  pki: "FLEET PKI",
  access: "AUTHORIZATION AND AUDIT",
  daemon: "DAEMON",
};
