import { existsSync } from "node:fs";
import { join } from "node:path";
import { acquireHomeLock, HomeLockedError, type HomeLock } from "../../home-lock";
import { EXECUTOR_KINDS, loadConfigFile, resolveSettings, type ServeConfig } from "../../config";
import { machineAddresses } from "../../local-addresses";
import { createLogger, resolveLogFormat, type LevelledLogger } from "../../log";
import { notifyReady } from "../../systemd-notify";
import { removeRuntimeState, writeRuntimeState, type ReloadRecord, type RuntimeState } from "../../runtime-state";
import { VERSION } from "../../version";
import { SETTINGS, type SettingName } from "../../settings/serve-settings";
import { startNode, type RunningNode } from "../../node";
import type { Command } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags, type FlagSpec } from "../flags";
import { checkJson, checkListing, settingFlags, settingsHelp } from "../settings-text";

const flags = {
  ...settingFlags(),
  config: { type: "string", value: "FILE" },
  check: { type: "boolean" },
  json: { type: "boolean" },
  quiet: { type: "boolean" },
} as const satisfies Record<string, FlagSpec>;

export const serveCommand: Command = {
  name: "serve",
  summary: "run the node: A2A over mutual TLS, tasks in SQLite",
  help: `Run the node: an A2A v1.0 server (JSON-RPC and HTTP+JSON) behind mutual TLS. Only clients with a
certificate from this fleet's CA get past the TLS handshake; their certificate's CN is their identity. Tasks, their history and
artifacts are kept in HOME/a2a-node.db. SIGHUP reloads: the config file and the certificate on disk are read
again; a new certificate, key or CA, the log level, the rate limits and the authorization policy apply at once
(open connections and tasks carry on), other changed settings are named in the log as needing a restart; the
fleet's revocation list is read again (and fetched from ca_peer). With ca_peer set (or on the CA's own home) the node renews its
certificate by itself at two thirds of its lifetime. Stops gracefully on
SIGTERM/SIGINT: running tasks get a grace period, then end FAILED ("interrupted") so no accepted task is left
without an outcome; a task waiting for input keeps waiting (its answer resumes it after the restart), and a
Hermes run is left running and re-attached to at the next start.

The log goes to stdout, one line per event (JSON unless stdout is a terminal; see --log-format): a line when a
task is accepted and one when it finishes, with its id, context id, peer, state and duration, never what it
says. Operators: GET /health/live, /health/ready (database, certificate, model endpoint; 503 naming what
failed) and /metrics (Prometheus) on every listener, and on --admin-port alone without a client certificate.

Who may call what is the [[authorize]] tables of the config file (none: every fleet member may call
everything); a refused call gets PERMISSION_DENIED. Every A2A call and every refused connection is a JSON
line in the audit log, HOME/audit.jsonl (0600, rotated by size; see --audit-log), never with message content.

USAGE
  a2a-node serve [--host ADDR] [--port PORT] [--executor ${EXECUTOR_KINDS.join("|")}] [--model-url URL] [--model NAME]

${settingsHelp()}

OTHER FLAGS
  --config FILE          TOML settings (default HOME/config.toml if present; see scripts/config.example.toml).
                         Order of precedence: defaults < config file < environment < flags
  --check                print the effective configuration, each value with where it came from (secrets only
                         as set or not), and exit: 0 when valid, 2 when not
  --json                 with --check: the configuration as JSON
  --quiet                log only warnings and errors

EXAMPLES
  a2a-node serve --executor echo --port 9443
  a2a-node serve --model-url http://127.0.0.1:8080/v1 --model qwen2.5   # llama.cpp server
  HERMES_API_KEY=... a2a-node serve --executor hermes --hermes-url http://127.0.0.1:8642
  A2A_NODE_HOME=/var/lib/a2a-node a2a-node serve --host 10.0.0.7

EXIT CODES
  0 stopped by a signal   1 could not start (no certificate, port in use, ...)   2 usage error
`,
  flags,
  async run(argv, { io, home }) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length) throw new UsageError(`serve takes no arguments (got '${positionals[0]}')`);
    const configFile = f.config ?? join(home, "config.toml");
    const { config, sources } = resolveSettings(f, io.env, loadConfigFile(configFile, f.config !== undefined));
    if (f.check) {
      if (config.tokenPort !== undefined && config.tokenTls === "off")
        io.stderr.write(
          `warning: the token listener (token_port = ${config.tokenPort}, on ${config.tokenHost}) is on without TLS (token_tls = off): bearer tokens cross the network in clear; set token_tls = "on" unless only this machine can reach it\n`,
        );
      io.stdout.write(
        f.json ? checkJson(home, configFile, config, sources) : checkListing(home, configFile, config, sources),
      );
      return ExitCode.Ok;
    }
    // The log goes to stdout, the journal's stream; errors that stop serve from starting go to stderr.
    const log = createLogger(
      (line) => io.stdout.write(line),
      f.quiet ? "warn" : config.logLevel,
      resolveLogFormat(config.logFormat, io.stdout.isTTY === true),
    );
    // Taken before the node starts: a SIGTERM that arrives while it starts (it has logged that it listens)
    // then stops it cleanly, instead of killing the process before its handlers exist.
    const stop = io.stopSignal;
    const lock = holdHome(home);
    let node;
    // Doctor, pki token and reload read what this node really runs with (flags included) from the home.
    let state: RuntimeState | undefined;
    const publish = () => {
      if (!state) return;
      try {
        writeRuntimeState(home, state);
      } catch (err) {
        log.warn(`cannot write ${home}/serve.json (doctor and 'a2a-node reload' read it)`, {
          reason: (err as Error).message,
        });
      }
    };
    try {
      node = await startNode(home, config, log, {
        listening: (n) => {
          state = runtimeState(n, config, sources, configFile);
          publish();
        },
      });
    } catch (err) {
      lock?.release();
      const e = err as NodeJS.ErrnoException;
      if (e.code === "EADDRINUSE")
        throw new CliError(
          `port ${config.port} on ${config.host} is already in use by another process`,
          ExitCode.Failure,
          `stop that process, or pass another --port (e.g. --port ${config.port + 1})`,
        );
      if (e.code === "EACCES")
        throw new CliError(
          `not allowed to listen on ${config.host}:${config.port}`,
          ExitCode.Failure,
          "use a port above 1023",
        );
      // Bun reports a host name that does not resolve only as "Failed to listen at HOST", without a code.
      if (
        e.code === "EADDRNOTAVAIL" ||
        e.code === "ENOTFOUND" ||
        (!e.code && /^Failed to listen at /.test(e.message ?? ""))
      )
        throw new CliError(
          `cannot listen on ${config.host}: it is not an address of this machine (nor a name for one)`,
          ExitCode.Failure,
          `pass --host with one of its addresses (${machineAddresses().join(", ")}), or --host 0.0.0.0 for all of them`,
        );
      throw err;
    }
    const running = node;
    void notifyReady(io.env, `serving ${node.name} on ${node.url}`, log);
    io.onReload?.(() => {
      void reload(
        running,
        () => resolveSettings(f, io.env, loadConfigFile(configFile, f.config !== undefined)).config,
        log,
        f.quiet,
      ).then((outcome) => {
        if (state) state.reload = { count: (state.reload?.count ?? 0) + 1, at: new Date().toISOString(), ...outcome };
        publish();
      });
    });
    if (stop) {
      await new Promise<void>((resolve) => {
        if (stop.aborted) resolve();
        else stop.addEventListener("abort", () => resolve(), { once: true });
      });
      log.info("stopping", { signal: String(stop.reason ?? "") });
    }
    await node.stop();
    removeRuntimeState(home);
    lock?.release();
    return ExitCode.Ok;
  },
};

/**
 * SIGHUP: the config file (and the certificate on disk) are read again and what can change without a restart
 * is applied. A config that no longer parses is reported and the running one kept: a typo must not stop a
 * node that was working.
 */
async function reload(
  node: RunningNode,
  read: () => ServeConfig,
  log: LevelledLogger,
  quiet: boolean,
): Promise<Omit<ReloadRecord, "count" | "at">> {
  try {
    const next = read();
    const { applied, needsRestart } = await node.reload(next);
    if (!quiet) log.setLevel(next.logLevel);
    log.info("reloaded", { applied: applied.join(",") || "nothing changed" });
    if (needsRestart.length)
      log.warn("these changes take effect only after a restart", { settings: needsRestart.join(",") });
    return { outcome: "applied", applied, needsRestart };
  } catch (err) {
    const reason = (err as Error).message;
    log.error("reload refused; the running configuration stays", { reason });
    return { outcome: "refused", applied: [], needsRestart: [], reason };
  }
}

/** What this node runs with, for HOME/serve.json: where it listens, its backends, and which settings were given how. */
function runtimeState(
  node: RunningNode,
  config: ServeConfig,
  sources: Record<SettingName, string>,
  configFile: string,
): RuntimeState {
  const given = (from: (source: string) => boolean) =>
    (Object.keys(sources) as SettingName[]).filter((n) => from(sources[n])).map((n) => SETTINGS[n].file);
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    version: VERSION,
    name: node.name,
    configFile,
    urls: {
      mtls: node.url,
      advertised: node.advertisedUrl,
      enroll: node.enrollUrl,
      plain: node.plainUrl,
      admin: node.adminUrl,
      token: node.tokenUrl,
    },
    advertisedExplicitly: sources.advertiseUrl !== "default",
    executor: config.executor,
    ...(config.executor === "openai" ? { modelUrl: config.modelUrl, model: config.model } : {}),
    ...(config.executor === "hermes" ? { hermesUrl: config.hermesUrl } : {}),
    database: node.database,
    fromFlags: given((s) => s === "flag"),
    fromEnv: [
      ...new Set(
        (Object.keys(sources) as SettingName[])
          .map((n) => sources[n])
          .filter((s) => s !== "flag" && s !== "file" && s !== "default"),
      ),
    ],
  };
}

/** One serve per home; a home that does not exist yet has no identity, which startNode reports. */
function holdHome(home: string): HomeLock | undefined {
  if (!existsSync(home)) return undefined;
  try {
    return acquireHomeLock(home);
  } catch (err) {
    if (err instanceof HomeLockedError)
      throw new CliError(
        err.message,
        ExitCode.Failure,
        `stop it first (kill ${err.pid}, or systemctl stop a2a-node), or give this one its own --home`,
      );
    throw err;
  }
}
