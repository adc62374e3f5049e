/**
 * The manual, inside the binary: one page per topic, printed by `a2a-node help TOPIC`, so a machine that has
 * only the binary has the whole of it. The sources are the Markdown files in topics/ (read them on GitHub as
 * well); `commands.md` and `settings.md` are generated from the command registry and the settings
 * declarations (scripts/help-reference.ts), and a test keeps them identical to what those make.
 */
import delegating from "./topics/delegating.md" with { type: "text" };
import fleetPki from "./topics/fleet-pki.md" with { type: "text" };
import authorization from "./topics/authorization.md" with { type: "text" };
import configuration from "./topics/configuration.md" with { type: "text" };
import settings from "./topics/settings.md" with { type: "text" };
import node from "./topics/node.md" with { type: "text" };
import operating from "./topics/operating.md" with { type: "text" };
import postgres from "./topics/postgres.md" with { type: "text" };
import outsidePeers from "./topics/outside-peers.md" with { type: "text" };
import hermes from "./topics/hermes.md" with { type: "text" };
import conformance from "./topics/conformance.md" with { type: "text" };
import systemd from "./topics/systemd.md" with { type: "text" };
import troubleshooting from "./topics/troubleshooting.md" with { type: "text" };
import benchmarks from "./topics/benchmarks.md" with { type: "text" };
import development from "./topics/development.md" with { type: "text" };
import grpc from "./topics/grpc.md" with { type: "text" };
import tracing from "./topics/tracing.md" with { type: "text" };
import commands from "./topics/commands.md" with { type: "text" };

export interface HelpTopic {
  /** As typed after `a2a-node help`. */
  name: string;
  /** One line for the list of topics. */
  summary: string;
  /** The page (Markdown, read as plain text). */
  text: string;
}

/** Every topic, in the order `a2a-node help` lists them. */
export const TOPICS: readonly HelpTopic[] = [
  {
    name: "delegating",
    summary: "sending tasks to peers: the commands at a glance, waiting, exit codes, who a peer is",
    text: delegating,
  },
  {
    name: "fleet-pki",
    summary: "the fleet's certificates: CA, joining, revocation, renewal, SPIFFE, the CA key",
    text: fleetPki,
  },
  { name: "authorization", summary: "who may call what ([[authorize]]), the audit log", text: authorization },
  { name: "configuration", summary: "config.toml, environment and flags, and how they combine", text: configuration },
  {
    name: "settings",
    summary: "every setting: config key, environment variable, flag, default (generated)",
    text: settings,
  },
  { name: "node", summary: "what the node does: protocol, executors, limits on tasks and callers", text: node },
  {
    name: "operating",
    summary: "health, metrics, logs, rate limits, connections and descriptors, the API reference",
    text: operating,
  },
  { name: "postgres", summary: "one agent on several replicas sharing a Postgres database", text: postgres },
  {
    name: "outside-peers",
    summary: "peers outside the fleet, the token listener, Hermes's own A2A",
    text: outsidePeers,
  },
  { name: "hermes", summary: "running Hermes Agent as the node's executor", text: hermes },
  { name: "conformance", summary: "the A2A conformance kit against this node", text: conformance },
  { name: "systemd", summary: "running the node as a system or user service", text: systemd },
  {
    name: "troubleshooting",
    summary: "a revoked or expired node, calling with curl, /openapi in a browser",
    text: troubleshooting,
  },
  { name: "benchmarks", summary: "measured figures, each with the command that made it", text: benchmarks },
  {
    name: "grpc",
    summary: "the third binding (A2A over gRPC): what works on Bun, the design, what is built and not yet wired",
    text: grpc,
  },
  {
    name: "tracing",
    summary: "one trace across the fleet (W3C Trace Context, OTLP/HTTP): the design, what is built and not yet wired",
    text: tracing,
  },
  { name: "development", summary: "building, testing, benchmarking and fuzzing from a checkout", text: development },
  { name: "commands", summary: "every command and subcommand with its flags (generated)", text: commands },
];

/** Where a topic's source lives in the repository. */
export const topicPath = (name: string) => `src/help/topics/${name}.md`;
