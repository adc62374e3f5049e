/**
 * The node under fuzz: the compiled binary serving on loopback (mTLS and the plain listener) from a fresh home,
 * with the echo executor, and the only webhook target it may reach, a sink on 127.0.0.1. What Linux says about
 * the process (RSS, open descriptors, connections) and what its database holds are read here.
 */
import { Database } from "bun:sqlite";
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { homePaths } from "../../src/home";
import { readBundle } from "../bench/rpc";
import type { TlsIdentity } from "./wire";

// import.meta.dirname, not Bun's import.meta.dir: tests load these modules through vitest's runner too.
export const ROOT = join(import.meta.dirname, "..", "..");
export const BINARY = join(ROOT, "dist", "a2a-node");

/**
 * The node's timers that end an incomplete input: src/server/http1.ts (ConnectionSet) gives a request 30 s to
 * arrive and closes a connection idle 65 s; a TLS handshake gets handshake_timeout_seconds (10 by default).
 */
export const NODE_TIMEOUTS_MS = { request: 30_000, idle: 65_000, handshake: 10_000 } as const;

export interface Fleet {
  home: string;
  client: TlsIdentity;
  /** Signed by another CA: the node must refuse it. */
  foreign: TlsIdentity;
}

function run(args: string[]): void {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString() || r.stdout.toString()}`);
}

/** The node's home (init-pki), a client bundle from `pki issue`, and a stranger from a second CA. */
export function makeFleet(dir: string): Fleet {
  const home = join(dir, "node");
  run(["--home", home, "init-pki", "--name", "fuzzer"]);
  const bundle = join(dir, "fuzz-client.bundle");
  run(["--home", home, "pki", "issue", "fuzz-client", "--out", bundle]);
  const b = readBundle(bundle);
  const strangerHome = join(dir, "stranger");
  run(["--home", strangerHome, "init-pki", "--name", "stranger"]);
  const s = homePaths(strangerHome);
  return {
    home,
    client: { cert: b.cert, key: b.key, ca: b.caCert },
    foreign: { cert: readFileSync(s.nodeCert, "utf8"), key: readFileSync(s.nodeKey, "utf8"), ca: b.caCert },
  };
}

/** Answers every webhook POST with 200 and closes the connection (so none lingers in the node's pool). */
export function startSink(): { port: number; deliveries(): number; stop(): void } {
  let deliveries = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      await req.arrayBuffer();
      deliveries++;
      return new Response("ok", { headers: { connection: "close" } });
    },
  });
  let stopped = false;
  return {
    port: server.port as number,
    deliveries: () => deliveries,
    stop: () => void (stopped || ((stopped = true), server.stop(true))),
  };
}

const MTLS_LINE = /serving A2A over mTLS .*listen=https:\/\/127\.0\.0\.1:(\d+)/;
const PLAIN_LINE = /plain-HTTP listener open .*url=http:\/\/127\.0\.0\.1:(\d+)/;

export interface ProcStats {
  rssBytes: number;
  fds: number;
  sockets: number;
}

const TCP_STATES: Record<string, string> = {
  "01": "ESTABLISHED",
  "02": "SYN_SENT",
  "03": "SYN_RECV",
  "04": "FIN_WAIT1",
  "05": "FIN_WAIT2",
  "06": "TIME_WAIT",
  "07": "CLOSE",
  "08": "CLOSE_WAIT",
  "09": "LAST_ACK",
  "0A": "LISTEN",
  "0B": "CLOSING",
};

/** "0100007F:24D3" as 127.0.0.1:9427 (IPv4; IPv6 left in hex). */
function hexAddr(s: string): { text: string; port: number } {
  const [ip, port] = s.split(":");
  const p = Number.parseInt(port, 16);
  if (ip.length !== 8) return { text: `[${ip}]:${p}`, port: p };
  return { text: `${[6, 4, 2, 0].map((i) => Number.parseInt(ip.slice(i, i + 2), 16)).join(".")}:${p}`, port: p };
}

export interface SocketInfo {
  /** tcp, tcp6, udp, udp6, unix, or other: not in /proc/net (a TCP socket its peer reset, netlink, ...). */
  kind: string;
  inode: string;
  local?: string;
  peer?: string;
  peerPort?: number;
  state?: string;
  /** The listener it belongs to, for a connection to one. */
  listener?: "mtls" | "plain";
}

export function describeSocket(s: SocketInfo): string {
  if (s.kind === "unix") return "unix";
  if (s.kind === "other") return `socket:[${s.inode}] (not in /proc/net: reset by its peer, netlink, ...)`;
  if (s.state === "LISTEN") return `${s.listener ?? s.kind} listening on ${s.local}`;
  return `${s.listener ? `${s.listener} connection` : s.kind} ${s.local} <- ${s.peer} ${s.state}`;
}

export class NodeProcess {
  private constructor(
    readonly proc: Subprocess,
    readonly ports: { mtls: number; plain: number },
    readonly startedAt: number,
  ) {}

  /** Starts `serve` and resolves once both listeners are up (read from its log, which goes to `logPath`). */
  static async start(home: string, logPath: string, o: { sinkPort: number; maxBody: number }): Promise<NodeProcess> {
    const proc = Bun.spawn(
      [
        BINARY,
        "--home",
        home,
        "serve",
        "--executor",
        "echo",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--plain-http-port",
        "0",
        "--push-allow",
        `127.0.0.1:${o.sinkPort}`,
        "--max-body",
        String(o.maxBody),
        "--log-format",
        "text",
      ],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const log = openSync(logPath, "a");
    // The node logs on stdout; anything on stderr (an unexpected error) goes to the same file.
    void (async () => {
      for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) writeSync(log, chunk);
    })().catch(() => {});
    let text = "";
    const ports = await new Promise<{ mtls: number; plain: number }>((resolve, reject) => {
      let found = false;
      void (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
          writeSync(log, chunk);
          if (found) continue;
          text += decoder.decode(chunk, { stream: true });
          const m = MTLS_LINE.exec(text);
          const p = PLAIN_LINE.exec(text);
          if (m && p) {
            found = true;
            text = "";
            resolve({ mtls: Number(m[1]), plain: Number(p[1]) });
          }
        }
        closeSync(log);
        if (!found)
          reject(new Error(`a2a-node serve exited (${await proc.exited}) before listening:\n${text.slice(-2000)}`));
      })();
    });
    return new NodeProcess(proc, ports, performance.now());
  }

  get pid(): number {
    return this.proc.pid;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Exit code or signal, once it ended. */
  get exit(): string {
    return String(this.proc.signalCode ?? this.proc.exitCode);
  }

  /** SIGTERM (a graceful stop), SIGKILL after `graceMs`; resolves with the exit code, or the signal that ended it. */
  async stop(graceMs = 20_000): Promise<{ code: number | null; killed: boolean }> {
    if (!this.running) return { code: this.proc.exitCode, killed: false };
    this.proc.kill("SIGTERM");
    let killed = false;
    const t = setTimeout(() => ((killed = true), this.proc.kill("SIGKILL")), graceMs);
    const code = await this.proc.exited;
    clearTimeout(t);
    return { code, killed };
  }

  stats(): ProcStats {
    const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
    const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
    let fds = 0;
    let sockets = 0;
    for (const fd of readdirSync(`/proc/${this.pid}/fd`)) {
      fds++;
      try {
        if (readlinkSync(`/proc/${this.pid}/fd/${fd}`).startsWith("socket:")) sockets++;
      } catch {
        // closed between the listing and the readlink
      }
    }
    return { rssBytes: rss, fds, sockets };
  }

  /** The node's sockets, as /proc/net knows them (a TCP socket reset by its peer is no longer listed there). */
  sockets(): SocketInfo[] {
    const inodes = new Set<string>();
    for (const fd of readdirSync(`/proc/${this.pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${this.pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {
        // closed meanwhile
      }
    }
    const out: SocketInfo[] = [];
    const found = new Set<string>();
    const listenerOf = (port: number) =>
      port === this.ports.mtls ? "mtls" : port === this.ports.plain ? "plain" : undefined;
    for (const kind of ["tcp", "tcp6", "udp", "udp6", "unix"]) {
      let text = "";
      try {
        text = readFileSync(`/proc/${this.pid}/net/${kind}`, "utf8");
      } catch {
        continue;
      }
      for (const line of text.split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        const inode = kind === "unix" ? f[6] : f[9];
        if (!inode || !inodes.has(inode)) continue;
        found.add(inode);
        if (kind === "unix") {
          out.push({ kind, inode });
          continue;
        }
        const local = hexAddr(f[1]);
        const peer = hexAddr(f[2]);
        out.push({
          kind,
          inode,
          local: local.text,
          peer: peer.text,
          peerPort: peer.port,
          state: TCP_STATES[f[3]] ?? f[3],
          listener: listenerOf(local.port),
        });
      }
    }
    for (const inode of inodes) if (!found.has(inode)) out.push({ kind: "other", inode });
    return out;
  }

  /**
   * TCP connections to either listener that a process still holds (inode not 0): ESTABLISHED, CLOSE_WAIT, and
   * FIN_WAIT2 too, a connection the node has shut down but not closed. TIME_WAIT and orphans belong to no one.
   */
  openConnections(): number {
    const ports = new Set([this.ports.mtls, this.ports.plain]);
    let n = 0;
    for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      let text = "";
      try {
        text = readFileSync(file, "utf8");
      } catch {
        continue;
      }
      for (const line of text.split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length < 10) continue;
        const localPort = Number.parseInt(f[1].split(":")[1], 16);
        if (ports.has(localPort) && f[3] !== "0A" && f[9] !== "0") n++;
      }
    }
    return n;
  }
}

/** The node's database, read-only while it runs (WAL: readers see the last commit). */
export function taskCensus(home: string): {
  byState: Record<string, number>;
  unfinished: number;
  pendingDeliveries: number;
} {
  const db = new Database(homePaths(home).database, { readonly: true });
  try {
    const byState: Record<string, number> = {};
    for (const r of db.query("SELECT state, COUNT(*) AS n FROM tasks GROUP BY state").all() as {
      state: string;
      n: number;
    }[])
      byState[r.state] = r.n;
    const unfinished = (byState.TASK_STATE_SUBMITTED ?? 0) + (byState.TASK_STATE_WORKING ?? 0);
    const pendingDeliveries = (db.query("SELECT COUNT(*) AS n FROM push_deliveries").get() as { n: number }).n;
    return { byState, unfinished, pendingDeliveries };
  } finally {
    db.close();
  }
}

/** Which of `ids` the database does not hold. */
export function missingTasks(home: string, ids: Iterable<string>): string[] {
  const db = new Database(homePaths(home).database, { readonly: true });
  try {
    const q = db.query("SELECT 1 FROM tasks WHERE id = ?");
    return [...ids].filter((id) => q.get(id) === null);
  } finally {
    db.close();
  }
}
