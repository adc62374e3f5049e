/**
 * The real Hermes Agent API server for tests: Hermes 0.18.2 (the older server generation) with its scripted
 * model, from the directory A2A_REAL_HERMES names (its README says what it is and how it behaves; the default is
 * realHermesDir() below, where the CI machine keeps it); a missing one fails the tests that need it, loudly, rather
 * than skipping them: a green run means the real server was tested.
 *
 * `real-hermes setup` (Debian packages, the extracted sources, a venv: about 45 s the first time on a fresh
 * machine, 4 s after) runs once into a cache directory (A2A_REAL_HERMES_CACHE, default
 * $TMPDIR/a2a-node-real-hermes-UID), under a lock so concurrent test runs share it, and again only when the
 * runner or its archive changed. Each server then gets a directory of its own (its HERMES_HOME, key, ports, logs,
 * scratch), whose `hermes-src` and `venv` are links to the cache's: starting one takes about 3 s.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the real server's runner and archive are (read at each call, so a test can point it elsewhere). */
export const realHermesDir = (): string => process.env.A2A_REAL_HERMES || "/work/shared/real-hermes";
const runner = () => join(realHermesDir(), "real-hermes");
const archive = () => join(realHermesDir(), "hermes-src.tgz");
const cacheDir = () =>
  process.env.A2A_REAL_HERMES_CACHE || join(tmpdir(), `a2a-node-real-hermes-${process.getuid?.() ?? "user"}`);

/** `gateway.api_server.max_concurrent_runs` of the servers started here. */
export const REAL_HERMES_CAPACITY = 2;

export interface RealHermes {
  readonly url: string;
  readonly apiKey: string;
  readonly port: number;
  /** Where the server's terminal tool runs commands (DANGER-RM's directories are made there). */
  readonly scratch: string;
  /** The server's own directory (logs/gateway.log, home/...). */
  readonly dir: string;
  /** The gateway's process id. */
  pid(): number;
  /** SIGTERM, as `systemctl stop` would: it interrupts every run in flight, then exits once its model calls return. */
  shutdown(): Promise<void>;
  /** Starts the gateway again on the same port (after shutdown()). */
  up(): Promise<void>;
  /** Stops it (and its model) and removes its directory. */
  close(): Promise<void>;
}

/** Fails with what to do when the real server is not where the tests look for it. */
export function requireRealHermes(): void {
  if (!existsSync(runner()) || !existsSync(archive()))
    throw new Error(
      `the real Hermes server is not at ${realHermesDir()} (no real-hermes runner or hermes-src.tgz there): set A2A_REAL_HERMES to the directory that holds them`,
    );
}

async function run(cmd: string[], env: Record<string, string> = {}): Promise<string> {
  const proc = Bun.spawn(cmd, { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}:\n${err || out}`);
  return out;
}

/** What the cache was set up from: the runner and the archive (their contents, not their times). */
function fingerprint(): string {
  const h = createHash("sha256");
  h.update(readFileSync(runner()));
  h.update(readFileSync(archive()));
  return h.digest("hex");
}

/** Runs `real-hermes setup` into the cache unless it was already done for this runner and archive. */
async function ensureCache(): Promise<void> {
  requireRealHermes();
  const cache = cacheDir();
  mkdirSync(cache, { recursive: true, mode: 0o700 });
  const ready = join(cache, ".a2a-node-ready");
  const want = fingerprint();
  if (existsSync(ready) && readFileSync(ready, "utf8") === want) return;
  // flock: one test run sets up, the others wait for it; the kernel drops the lock if that run dies.
  const script = `if [ "$(cat "$2" 2>/dev/null)" != "$3" ]; then "$4" setup "$1" >&2 && printf %s "$3" > "$2"; fi`;
  await run(["flock", join(cache, ".lock"), "bash", "-c", script, "setup", join(cache, "dir"), ready, want, runner()]);
}

/** KEY=value lines, as `real-hermes start` prints them. */
function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Resolves when process `pid` (not a child of ours) has exited: `tail --pid` waits on it. */
async function exitOf(pid: number): Promise<void> {
  await Bun.spawn(["tail", `--pid=${pid}`, "-f", "/dev/null"], { stdout: "ignore", stderr: "ignore" }).exited;
}

export async function startRealHermes(): Promise<RealHermes> {
  await ensureCache();
  const cached = join(cacheDir(), "dir");
  const dir = mkdtempSync(join(tmpdir(), "a2a-real-hermes-"));
  for (const sub of ["home", "logs", "run", "scratch"]) mkdirSync(join(dir, sub), { recursive: true });
  // The sources and the venv are read-only at run time: shared with the cache.
  symlinkSync(join(cached, "hermes-src"), join(dir, "hermes-src"));
  symlinkSync(join(cached, "venv"), join(dir, "venv"));
  const apiKey = `hk-${randomBytes(24).toString("hex")}`;
  writeFileSync(join(dir, "hermes.key"), apiKey, { mode: 0o600 });
  chmodSync(join(dir, "hermes.key"), 0o600);
  // setup's config.yaml (the fake model as provider, manual approvals), with this server's scratch directory, and
  // room for CAPACITY runs at once (Hermes's default is 10: filling it takes ten agents).
  const config = readFileSync(join(cached, "home", "config.yaml"), "utf8").replaceAll(
    join(cached, "scratch"),
    join(dir, "scratch"),
  );
  writeFileSync(
    join(dir, "home", "config.yaml"),
    `${config}gateway:\n  api_server:\n    max_concurrent_runs: ${REAL_HERMES_CAPACITY}\n`,
  );

  const RUNNER = runner();
  let info = parseInfo(await run([RUNNER, "start", dir]));
  const port = Number(new URL(info.HERMES_URL!).port);
  const modelPort = Number(new URL(info.MODEL_URL!).port);
  return {
    url: info.HERMES_URL!,
    apiKey,
    port,
    scratch: join(dir, "scratch"),
    dir,
    pid: () => Number(info.HERMES_PID),
    async shutdown() {
      const pid = Number(info.HERMES_PID);
      process.kill(pid, "SIGTERM");
      await exitOf(pid);
    },
    async up() {
      info = parseInfo(await run([RUNNER, "start", dir, "--port", String(port), "--model-port", String(modelPort)]));
    },
    async close() {
      await run([RUNNER, "stop", dir]).catch(() => "");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
