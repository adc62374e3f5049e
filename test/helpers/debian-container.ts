/**
 * A real systemd for tests: a minimal Debian 12 root file system made by `debootstrap` (minbase with systemd,
 * as a small server or a cloud image has it: no procps, so no /bin/kill; no ca-certificates), booted with
 * `systemd-nspawn -b`, commands run in it through `nsenter`. The machine's own systemd is not needed (nspawn
 * runs with --register=no --keep-unit, so it asks nothing of a host manager).
 *
 * The root file system is made once and kept outside the repository, under /var/cache/a2a-node-test (or
 * A2A_NODE_TEST_CACHE), in a folder named by ROOTFS_KEY: a change of recipe gets a new folder. It is built
 * in a temporary folder beside it and renamed into place, so a run that dies half-way leaves nothing a later
 * run would take for whole, and two runs at once never share a half-made one. Each container boots it
 * read-only under a tmpfs overlay (--volatile=overlay): what a test installs is gone when it stops, and the
 * cache stays as built. Each has its own network namespace (--private-network: loopback only), so the node in
 * it listens on 9443 without meeting anything of the host's.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The recipe; ROOTFS_KEY names it. */
const SUITE = "bookworm";
const INCLUDE = ["systemd", "systemd-sysv", "dbus"];
export const ROOTFS_KEY = `debian12-minbase-systemd-v1`;
const MIRROR = process.env.A2A_NODE_TEST_DEBIAN_MIRROR ?? "http://deb.debian.org/debian";
const CACHE = process.env.A2A_NODE_TEST_CACHE ?? "/var/cache/a2a-node-test";

/** How to skip these tests on purpose, named in every failure that says they cannot run here. */
export const SKIP_HINT = "to leave the real-systemd test out on purpose, set A2A_NODE_TEST_SYSTEMD=skip";

export class CannotRunHere extends Error {
  constructor(message: string) {
    super(`${message} (${SKIP_HINT})`);
    this.name = "CannotRunHere";
  }
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[], opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<Run> {
  const p = Bun.spawn(argv, {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: opts.env ?? (process.env as Record<string, string>),
  });
  const timer = opts.timeoutMs ? setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs) : undefined;
  const [stdout, stderr, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** debootstrap, systemd-nspawn and nsenter, installed with apt-get if missing (root only). */
export async function ensureTools(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new CannotRunHere("booting a Debian container with systemd-nspawn needs root; run the tests as root");
  const missing = [
    ["debootstrap", "debootstrap"],
    ["systemd-nspawn", "systemd-container"],
    ["nsenter", "util-linux"],
  ].filter(([tool]) => !Bun.which(tool, { PATH: `/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ""}` }));
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  const apt = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", ...packages];
  const env = { ...(process.env as Record<string, string>), DEBIAN_FRONTEND: "noninteractive" };
  let r = await run(apt, { timeoutMs: 600_000, env });
  // A machine whose package lists are stale or absent: read them, then try once more.
  if (r.code !== 0) {
    await run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update"], { timeoutMs: 600_000, env });
    r = await run(apt, { timeoutMs: 600_000, env });
  }
  if (r.code !== 0)
    throw new CannotRunHere(
      `could not install ${packages.join(", ")} (${apt.join(" ")} exited ${r.code}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" / ")}`,
    );
}

/** The cached root file system, made with debootstrap if absent (a few minutes, once per machine). */
export async function ensureRootfs(log: (line: string) => void = () => {}): Promise<string> {
  const home = join(CACHE, ROOTFS_KEY);
  const root = join(home, "root");
  if (existsSync(join(home, "complete"))) return root;
  mkdirSync(CACHE, { recursive: true, mode: 0o755 });
  const building = mkdtempSync(join(CACHE, `${ROOTFS_KEY}.building-`));
  try {
    log(
      `making ${root} with debootstrap (${SUITE}, minbase + ${INCLUDE.join(", ")}) from ${MIRROR}; later runs reuse it`,
    );
    const r = await run(
      ["debootstrap", "--variant=minbase", `--include=${INCLUDE.join(",")}`, SUITE, join(building, "root"), MIRROR],
      { timeoutMs: 20 * 60_000 },
    );
    if (r.code !== 0)
      throw new CannotRunHere(
        `debootstrap ${SUITE} from ${MIRROR} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" / ")}; set A2A_NODE_TEST_DEBIAN_MIRROR to a mirror this machine reaches`,
      );
    writeFileSync(
      join(building, "complete"),
      `${new Date().toISOString()} debootstrap --variant=minbase --include=${INCLUDE.join(",")} ${SUITE} ${MIRROR}\n`,
    );
    try {
      renameSync(building, home);
    } catch (err) {
      // Another run finished first: its copy is as good as ours.
      if (!existsSync(join(home, "complete"))) throw err;
    }
  } finally {
    await removeTree(building);
  }
  return root;
}

/**
 * Deletes a half-made root file system. debootstrap mounts /proc and /sys inside the target while it works,
 * and one killed half-way leaves them mounted: those are unmounted first (deepest first), and rm stays on the
 * folder's own file system, so nothing of the host's is ever reached through them.
 */
async function removeTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4]?.replace(/\\040/g, " "))
    .filter((m): m is string => m !== undefined && (m === dir || m.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await run(["umount", "-l", m]);
  await run(["rm", "-rf", "--one-file-system", dir]);
}

export interface Container {
  /** The container's PID 1, as the host sees it. */
  leader: number;
  /** Runs a command inside, as root, with `env` as its whole environment (PATH is added). */
  exec(argv: string[], opts?: { env?: Record<string, string>; timeoutMs?: number }): Promise<Run>;
  /** Follows `journalctl -u UNIT` from now on; `waitFor` resolves with the first line matching. */
  follow(unit: string): { waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>; stop(): void };
  /** Powers it off (SIGTERM to nspawn); kills what is left if it does not end in time. Safe to call twice. */
  stop(): Promise<void>;
  /** What nspawn printed (the boot), for a failure's message. */
  console(): string;
}

const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * Boots `root` with `binds` (host path → path inside, read-only) and resolves once its systemd says boot is
 * done. The nspawn process is watched by a shell that stops it when this process's end of a pipe closes, so a
 * test runner killed outright does not leave a container running.
 */
export async function bootContainer(root: string, binds: Record<string, string>): Promise<Container> {
  const name = `a2a-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const nspawn = [
    "systemd-nspawn",
    "-b",
    "--register=no",
    "--keep-unit",
    "--volatile=overlay",
    "--private-network",
    "-D",
    root,
    "-M",
    name,
    ...Object.entries(binds).map(([from, to]) => `--bind-ro=${from}:${to}`),
  ];
  // sh: start nspawn, then wait for stdin to close (this process ending, or stop()), then power it off.
  const watchdog = `${nspawn.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ")} </dev/null & n=$!; echo $n; cat >/dev/null; kill -TERM $n 2>/dev/null; wait $n`;
  const shell = Bun.spawn(["sh", "-c", watchdog], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let output = "";
  const decoder = new TextDecoder();
  const nspawnPid = new Promise<number>((resolve, reject) => {
    void (async () => {
      let first = true;
      for await (const chunk of shell.stdout as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        if (first) {
          first = false;
          resolve(Number.parseInt(text, 10));
          output += text.slice(text.indexOf("\n") + 1);
        } else output += text;
      }
      reject(new Error(`systemd-nspawn ended at once:\n${output}`));
    })();
  });
  void (async () => {
    for await (const chunk of shell.stderr as unknown as AsyncIterable<Uint8Array>)
      output += decoder.decode(chunk, { stream: true });
  })();
  let stopped: Promise<void> | undefined;
  let leader = 0;
  const stop = () =>
    (stopped ??= (async () => {
      shell.stdin.end();
      const ended = await Promise.race([shell.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
      if (!ended) {
        // Did not power off in time: end the container's processes (PID 1 takes its namespace with it), then nspawn.
        if (leader) safeKill(leader);
        safeKill(await nspawnPid.catch(() => 0));
        shell.kill("SIGKILL");
        await shell.exited;
      }
    })());

  try {
    const pid = await nspawnPid;
    leader = await containerInit(pid, 30_000);
    // Booting: systemd answers on its private socket only after a moment, then --wait blocks until boot ends.
    const deadline = Date.now() + 90_000;
    for (;;) {
      const r = await run(["nsenter", "-t", String(leader), "-a", "--", "systemctl", "is-system-running", "--wait"], {
        timeoutMs: 90_000,
      });
      const state = r.stdout.trim();
      if (state === "running" || state === "degraded") break;
      if (Date.now() > deadline)
        throw new Error(
          `the container did not finish booting (systemctl is-system-running: ${state || r.stderr.trim()}):\n${output}`,
        );
      await Bun.sleep(200);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  const enter = ["nsenter", "-t", String(leader), "-a", "--"];
  return {
    leader,
    exec: (argv, opts = {}) =>
      run(
        [
          ...enter,
          "env",
          "-i",
          `PATH=${PATH}`,
          "HOME=/root",
          ...Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`),
          ...argv,
        ],
        { timeoutMs: opts.timeoutMs ?? 120_000 },
      ),
    follow(unit) {
      const p = Bun.spawn([...enter, "journalctl", "-u", unit, "-f", "-n", "0", "-o", "cat", "--no-pager"], {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "ignore",
      });
      const lines: string[] = [];
      const waiters: { pattern: RegExp; resolve(line: string): void }[] = [];
      void (async () => {
        let partial = "";
        for await (const chunk of p.stdout as unknown as AsyncIterable<Uint8Array>) {
          const parts = (partial + decoder.decode(chunk, { stream: true })).split("\n");
          partial = parts.pop() ?? "";
          lines.push(...parts);
          for (let i = waiters.length - 1; i >= 0; i--) {
            const found = lines.find((l) => waiters[i].pattern.test(l));
            if (found) waiters.splice(i, 1)[0].resolve(found);
          }
        }
      })();
      return {
        waitFor: (pattern, timeoutMs = 60_000) =>
          new Promise<string>((resolve, reject) => {
            const found = lines.find((l) => pattern.test(l));
            if (found) return resolve(found);
            const timer = setTimeout(
              () =>
                reject(
                  new Error(
                    `no journal line matching ${pattern} within ${timeoutMs / 1000} s; seen:\n${lines.join("\n")}`,
                  ),
                ),
              timeoutMs,
            );
            waiters.push({ pattern, resolve: (l) => (clearTimeout(timer), resolve(l)) });
          }),
        stop: () => p.kill(),
      };
    },
    stop,
    console: () => output,
  };
}

/**
 * The container's PID 1 as the host sees it: the descendant of nspawn that runs systemd in a PID namespace
 * of its own. nspawn forks more than once on the way (an outer child that exits, the inner one that execs
 * systemd), so the first child is not it; wait until that process exists.
 */
async function containerInit(nspawn: number, timeoutMs: number): Promise<number> {
  const ours = readlinkSafe("/proc/self/ns/pid");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const pid of descendants(nspawn)) {
      const ns = readlinkSafe(`/proc/${pid}/ns/pid`);
      if (ns && ns !== ours && readText(`/proc/${pid}/comm`).trim() === "systemd") return pid;
    }
    if (Date.now() > deadline)
      throw new Error(`systemd-nspawn (PID ${nspawn}) started no container within ${timeoutMs / 1000} s`);
    await Bun.sleep(50);
  }
}

function descendants(pid: number): number[] {
  const children = readText(`/proc/${pid}/task/${pid}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((c) => [c, ...descendants(c)]);
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function readlinkSafe(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

function safeKill(pid: number): void {
  try {
    if (pid > 0) process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
