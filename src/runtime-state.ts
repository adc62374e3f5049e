/**
 * What a running `serve` tells the other commands on its home about itself: HOME/serve.json, written once it
 * listens and again after each reload, removed when it stops. A node started with flags (another port, another
 * model URL, Postgres) differs from what its config file says; doctor judges the node as it runs, `pki token`
 * names the enrollment port it really opened, and `reload` waits for the outcome of the SIGHUP it sent.
 *
 * It holds no secret (a database URL without its password; never a key or token), and is 0600 like the rest
 * of the home. It is believed only while its PID is the live `serve` holding the home's lock (home-lock.ts),
 * so a file left by a node killed with SIGKILL says nothing.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../pki/secure-file";
import { homeLockHolder } from "./home-lock";

export const RUNTIME_FILE = "serve.json";

/** The last reload (SIGHUP) and how it went. */
export interface ReloadRecord {
  /** Reloads done since start: a waiting `reload` compares it with the count before its signal. */
  count: number;
  at: string;
  outcome: "applied" | "refused";
  /** Config keys (and "certificate") applied without a restart. */
  applied: string[];
  /** Changed config keys that need a restart. */
  needsRestart: string[];
  /** Why a refused reload was refused (the config file's error). */
  reason?: string;
}

export interface RuntimeState {
  pid: number;
  startedAt: string;
  version: string;
  /** The node's fleet name. */
  name: string;
  /** The config file it read (which may not exist). */
  configFile: string;
  /** Where each listener is bound (0.0.0.0 for every interface), and the URL its card advertises. */
  urls: { mtls: string; advertised: string; enroll?: string; plain?: string; admin?: string; token?: string };
  /** advertise_url was set (config, environment or flag), rather than worked out from the bound address. */
  advertisedExplicitly: boolean;
  executor: string;
  /** The model endpoint the executor uses (openai), or Hermes's (hermes). */
  modelUrl?: string;
  model?: string;
  hermesUrl?: string;
  /** Where tasks are kept: the SQLite file, or the Postgres database without its password. */
  database: { kind: "sqlite" | "postgres"; where: string };
  /** Settings (config keys) that came from flags, and the environment variables that set others. */
  fromFlags: string[];
  fromEnv: string[];
  reload?: ReloadRecord;
}

export function runtimePath(home: string): string {
  return join(home, RUNTIME_FILE);
}

/** Written whole or not at all (a reader never sees half a file). */
export function writeRuntimeState(home: string, state: RuntimeState): void {
  writeFileAtomic(runtimePath(home), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600, overwrite: true });
}

/** Removed by the process that wrote it, only if it is still its own. */
export function removeRuntimeState(home: string, pid = process.pid): void {
  if (readFile(home)?.pid === pid) rmSync(runtimePath(home), { force: true });
}

/**
 * The state of the `serve` running on `home` now, if one runs and its file is its own: undefined when no
 * node runs, when it has not listened yet, or when the file cannot be read (another user's home).
 */
export function runningNodeState(home: string): RuntimeState | undefined {
  const pid = homeLockHolder(home);
  if (pid === undefined) return undefined;
  const state = readFile(home);
  return state?.pid === pid ? state : undefined;
}

/** The file as it is, whoever wrote it (for `reload`, which knows the PID it signalled). */
export function readRuntimeFile(home: string): RuntimeState | undefined {
  return readFile(home);
}

function readFile(home: string): RuntimeState | undefined {
  const path = runtimePath(home);
  if (!existsSync(path)) return undefined;
  try {
    const state = JSON.parse(readFileSync(path, "utf8")) as RuntimeState;
    return typeof state?.pid === "number" && typeof state.urls?.mtls === "string" ? state : undefined;
  } catch {
    return undefined;
  }
}

/** A URL to reach a listener bound to `url`'s host from this machine: loopback for a wildcard address. */
export function dialable(url: string): string {
  const u = new URL(url);
  if (u.hostname === "0.0.0.0") u.hostname = "127.0.0.1";
  else if (u.hostname === "[::]") u.hostname = "[::1]";
  return u.origin;
}
