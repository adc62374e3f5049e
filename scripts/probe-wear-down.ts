/**
 * Can a stranger (or one fleet member) wear a node down? Issue 25's probe, as a script, against the compiled
 * binary on loopback. Each scenario starts its own node in a temp home, attacks it the way the probe did, and
 * prints what a fleet member or an operator still gets:
 *
 *   silent   20 source addresses (127.0.0.2-21) hold silent TCP connections to the mTLS port (re-opened as the
 *            node drops them); meanwhile a fleet member opens a fresh TLS connection every 100 ms.
 *   silent6  the same from one IPv6 /64 (200 addresses of 2001:db8:1::/64), in a private network namespace
 *            (unshare -n, the /64 routed to lo, nonlocal bind on), the fleet member from another /64.
 *   idle     two local processes open 20,000 idle connections to the plain loopback port (10,000 each); then
 *            a fleet member on the mTLS port, the admin port's /health/ready, the node's descriptors.
 *   tokens   an accepted call and a first refusal on the token listener, then a bad-token flood; which of
 *            the two records are still in the audit log files afterwards, and how many lines the flood made.
 *   enroll   a flood of failed enrollments (well-formed, unknown tokens) on the enrollment port: attempts the
 *            node handled per second, their answers, the node's CPU and journal bytes per second, audit lines.
 *   pki      one member asks GET /pki/crl, then POST /pki/renew (fresh keys), as fast as it can.
 *
 *   bun scripts/probe-wear-down.ts [--only silent,idle,...] [--seconds N] [--binary PATH] [--json FILE] [--serve-arg
 *   ARG]...
 *
 * Needs dist/a2a-node (npm run build), or --binary. `silent6` needs unshare(1) and ip(8) with the right to
 * make a network namespace (root in a container); it is skipped, saying so, where that fails.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLK_TCK, cpuTicks, killAllNow, stop, track } from "./bench/proc";

const ROOT = join(import.meta.dir, "..");
const SCENARIOS = ["silent", "silent6", "idle", "tokens", "enroll", "pki"] as const;
type Scenario = (typeof SCENARIOS)[number];

const USAGE = `usage: bun scripts/probe-wear-down.ts [--only ${SCENARIOS.join(",")}] [--seconds N] [--binary PATH] [--json FILE]
  --only      scenarios to run, comma-separated (default: all)
  --seconds   how long each flood lasts (default 15)
  --binary    the a2a-node binary to probe (default dist/a2a-node)
  --json      also write the results to FILE
  --serve-arg ARG  pass ARG to every 'a2a-node serve' (repeat it: --serve-arg --max-handshakes --serve-arg 1024)`;

interface Args {
  only: Scenario[];
  seconds: number;
  binary: string;
  json?: string;
  serveArgs: string[];
  role?: string;
  roleArg?: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { only: [...SCENARIOS], seconds: 15, binary: join(ROOT, "dist", "a2a-node"), serveArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const [k, v] = [argv[i], argv[i + 1]];
    const need = () => {
      if (v === undefined) usage(`${k} needs a value`);
      i++;
      return v as string;
    };
    if (k === "--help" || k === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else if (k === "--only") {
      const names = need().split(",");
      for (const n of names) if (!SCENARIOS.includes(n as Scenario)) usage(`unknown scenario ${n}`);
      a.only = names as Scenario[];
    } else if (k === "--seconds") {
      a.seconds = Number(need());
      if (!(a.seconds > 0)) usage("--seconds must be a positive number");
    } else if (k === "--binary") a.binary = need();
    else if (k === "--json") a.json = need();
    else if (k === "--serve-arg") a.serveArgs.push(need());
    else if (k === "--role") {
      a.role = need();
      a.roleArg = argv[++i];
    } else usage(`unknown option ${k}`);
  }
  return a;
}

function usage(problem: string): never {
  console.error(`${problem}\n${USAGE}`);
  process.exit(2);
}

const args = parseArgs(process.argv.slice(2));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// Roles run as child processes, so an attacker's sockets and event loop are not the measuring client's.

if (args.role === "hold-idle") {
  // Opens N idle TCP connections to host:port and holds them; prints how many connected, then waits.
  const { port, count, host } = JSON.parse(args.roleArg as string) as { port: number; count: number; host: string };
  let connected = 0;
  let failed = 0;
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const s = tcpConnect({ port, host });
    s.on("connect", () => connected++);
    s.on("error", () => failed++);
    sockets.push(s);
    if (i % 200 === 199) await sleep(5);
  }
  await sleep(3000);
  let open = 0;
  for (const s of sockets) if (!s.destroyed) open++;
  console.log(JSON.stringify({ connected, failed, open }));
  await new Promise(() => {}); // held until killed
}

if (args.role === "silent-flood") {
  // Keeps up to `perSource` silent TCP connections from each source address open, re-opening those closed.
  const { port, host, sources, perSource } = JSON.parse(args.roleArg as string) as {
    port: number;
    host: string;
    sources: string[];
    perSource: number;
  };
  let opened = 0;
  const open = (from: string) => {
    const s = tcpConnect({ port, host, localAddress: from });
    opened++;
    s.on("error", () => {});
    s.on("close", () => setTimeout(() => open(from), 20));
  };
  for (const from of sources) for (let i = 0; i < perSource; i++) open(from);
  setInterval(() => console.log(JSON.stringify({ opened })), 1000);
  await new Promise(() => {});
}

// ---------------------------------------------------------------------------------------------------------
// A fleet in a temp folder and a served node.

const dir = mkdtempSync(join(tmpdir(), "a2a-probe-"));
process.on("exit", () => {
  killAllNow();
  if (!args.role) rmSync(dir, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));

function cli(home: string, ...rest: string[]): string {
  const r = Bun.spawnSync([args.binary, "--home", home, ...rest], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${rest.join(" ")}: ${r.stderr}`);
  return r.stdout.toString();
}

interface Fleet {
  alpha: string;
  beta: string;
  tls: { cert: string; key: string; ca: string };
}

function makeFleet(where: string): Fleet {
  const alpha = join(where, "alpha");
  const beta = join(where, "beta");
  cli(alpha, "init-pki", "--name", "alpha", "--san", "::1");
  cli(alpha, "pki", "issue", "beta", "--out", join(where, "beta.bundle"));
  cli(beta, "init-pki", "--bundle", join(where, "beta.bundle"));
  rmSync(join(where, "beta.bundle"));
  const read = (p: string) => readFileSync(join(beta, p), "utf8");
  return {
    alpha,
    beta,
    tls: { cert: read("certs/node.crt"), key: read("secrets/node.key"), ca: read("certs/ca.crt") },
  };
}

interface Served {
  pid: number;
  proc: Bun.Subprocess;
  urls: Record<string, string>;
  /** Bytes the node wrote on stdout (its journal) so far. */
  journalBytes(): number;
  lines(): Record<string, unknown>[];
}

/** Starts `serve` and resolves once every listener asked for has logged its URL. */
async function serve(home: string, extra: string[], wait: Record<string, RegExp>, host = "127.0.0.1"): Promise<Served> {
  const proc = track(
    Bun.spawn(
      [
        args.binary,
        "--home",
        home,
        "serve",
        "--host",
        host,
        "--port",
        "0",
        "--executor",
        "echo",
        "--log-format",
        "json",
        ...args.serveArgs,
        ...extra,
      ],
      {
        stdout: "pipe",
        stderr: "pipe",
      },
    ),
  );
  const urls: Record<string, string> = {};
  const lines: Record<string, unknown>[] = [];
  let bytes = 0;
  let partial = "";
  let ready!: () => void;
  const all = new Promise<void>((r) => (ready = r));
  const wanted = { mtls: /^serving A2A over mTLS$/, ...wait };
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      const parts = (partial + dec.decode(chunk, { stream: true })).split("\n");
      partial = parts.pop() ?? "";
      for (const p of parts) {
        let l: Record<string, unknown>;
        try {
          l = JSON.parse(p);
        } catch {
          continue;
        }
        if (lines.length < 100_000) lines.push(l);
        for (const [k, re] of Object.entries(wanted))
          if (urls[k] === undefined && re.test(String(l.msg))) urls[k] = String(k === "mtls" ? l.listen : l.url);
        if (Object.keys(wanted).every((k) => urls[k] !== undefined)) ready();
      }
    }
  })();
  void new Response(proc.stderr).text();
  await Promise.race([all, proc.exited.then((c) => Promise.reject(new Error(`serve exited ${c}`)))]);
  return { pid: proc.pid, proc, urls, journalBytes: () => bytes, lines: () => lines };
}

/** One HTTP/1.1 request on a fresh connection (TLS when `tls` is given); resolves with the status, or the error. */
function request(
  url: string,
  opts: {
    tls?: Fleet["tls"];
    path: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    from?: string;
    timeoutMs?: number;
  },
): Promise<number | string> {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const body = opts.body ?? "";
    const head =
      `${opts.method ?? "GET"} ${opts.path} HTTP/1.1\r\nhost: ${u.host}\r\nconnection: close\r\n` +
      Object.entries(opts.headers ?? {})
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("") +
      (body ? `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` : "") +
      "\r\n";
    let s: Socket | TLSSocket;
    let got = "";
    const done = (r: number | string) => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done("timeout"), opts.timeoutMs ?? 3000);
    const onReady = () => s.write(head + body);
    if (u.protocol === "https:")
      s = tlsConnect(
        {
          host,
          port: Number(u.port),
          localAddress: opts.from,
          ...(opts.tls ?? {}),
          rejectUnauthorized: false,
          checkServerIdentity: () => undefined,
        } as import("node:tls").ConnectionOptions,
        onReady,
      );
    else s = tcpConnect({ host, port: Number(u.port), localAddress: opts.from }, onReady);
    s.on("data", (d) => {
      got += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m) done(Number(m[1]));
    });
    s.on("error", (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
    s.on("close", () => done(got ? "malformed" : "closed"));
  });
}

const tally = (xs: (number | string)[]) =>
  xs.reduce<Record<string, number>>((m, x) => ((m[String(x)] = (m[String(x)] ?? 0) + 1), m), {});

/** Prometheus text → value of one series (undefined if absent). */
function metric(text: string, series: string): number | undefined {
  for (const line of text.split("\n")) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}

async function scrape(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(5000) }).catch((e) => e as Error);
  return res instanceof Response ? res.text() : "";
}

function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Scenarios.

interface SilentConfig {
  binary: string;
  seconds: number;
  host: string;
  sources: string[];
  perSource: number;
  memberFrom?: string;
}

async function silentScenario(c: SilentConfig): Promise<Record<string, unknown>> {
  const where = mkdtempSync(join(tmpdir(), "a2a-probe-silent-"));
  try {
    const fleet = makeFleet(where);
    const node = await serve(fleet.alpha, ["--admin-port", "0"], { admin: /^admin port open/ }, c.host);
    const port = Number(new URL(node.urls.mtls).port);
    const target = c.host === "::" ? "::1" : "127.0.0.1";
    const url = `https://${target.includes(":") ? `[${target}]` : target}:${port}`;
    const baseline = await request(url, { tls: fleet.tls, path: "/health", from: c.memberFrom });
    const flood = track(
      Bun.spawn(
        [
          process.execPath,
          import.meta.path,
          "--role",
          "silent-flood",
          JSON.stringify({ port, host: target, sources: c.sources, perSource: c.perSource }),
        ],
        {
          stdout: "pipe",
          stderr: "inherit",
        },
      ),
    );
    await sleep(1500); // the attackers' connections are in
    const results: (number | string)[] = [];
    const cpu0 = cpuTicks(node.pid);
    const t0 = performance.now();
    const end = Date.now() + c.seconds * 1000;
    const took: number[] = [];
    while (Date.now() < end) {
      // 10 s to answer: on a busy machine a slow answer is not a refusal (ECONNRESET, closed).
      const t = performance.now();
      results.push(await request(url, { tls: fleet.tls, path: "/health", from: c.memberFrom, timeoutMs: 10_000 }));
      took.push((performance.now() - t) / 1000);
      await sleep(100);
    }
    took.sort((a, b) => a - b);
    const cpu = (cpuTicks(node.pid) - cpu0) / CLK_TCK / ((performance.now() - t0) / 1000);
    const metrics = await scrape(node.urls.admin);
    await stop(flood, 500);
    await stop(node.proc);
    const ok = results.filter((r) => r === 200).length;
    return {
      attackers: `${c.sources.length} source addresses × ${c.perSource} silent connections each`,
      baselineStatus: baseline,
      memberAttempts: results.length,
      memberOk: ok,
      memberOkPercent: Math.round((1000 * ok) / results.length) / 10,
      memberOutcomes: tally(results),
      memberSecondsMedian: Math.round(took[Math.floor(took.length / 2)] * 100) / 100,
      memberSecondsMax: Math.round((took.at(-1) ?? 0) * 100) / 100,
      nodeCpuCores: Math.round(cpu * 100) / 100,
      nodeConnectionsRefused: Object.fromEntries(
        metrics
          .split("\n")
          .filter((l) => l.startsWith("a2a_node_connections_refused_total{") && !l.endsWith(" 0"))
          .map((l) => [l.slice(l.indexOf('"') + 1, l.lastIndexOf('"')), Number(l.split(" ").at(-1))]),
      ),
    };
  } finally {
    rmSync(where, { recursive: true, force: true });
  }
}

async function silent(): Promise<Record<string, unknown>> {
  const sources = Array.from({ length: 20 }, (_, i) => `127.0.0.${i + 2}`);
  return silentScenario({ binary: args.binary, seconds: args.seconds, host: "127.0.0.1", sources, perSource: 64 });
}

async function silent6(): Promise<Record<string, unknown>> {
  const sources = Array.from({ length: 200 }, (_, i) => `2001:db8:1::${(i + 1).toString(16)}`);
  const cfg: SilentConfig = {
    binary: args.binary,
    seconds: args.seconds,
    host: "::",
    sources,
    perSource: 64,
    memberFrom: "2001:db8:2::1",
  };
  const script = [
    "ip link set lo up",
    "ip -6 route add local 2001:db8:1::/64 dev lo",
    "ip -6 route add local 2001:db8:2::/64 dev lo",
    // Lets a socket bind any address of those /64s as its source.
    "sysctl -qw net.ipv6.ip_nonlocal_bind=1",
    `exec "$0" "$@"`,
  ].join(" && ");
  const p = track(
    Bun.spawn(
      [
        "unshare",
        "-n",
        "sh",
        "-c",
        script,
        process.execPath,
        import.meta.path,
        "--binary",
        args.binary,
        ...args.serveArgs.flatMap((a) => ["--serve-arg", a]),
        "--role",
        "silent6-inner",
        JSON.stringify(cfg),
      ],
      {
        stdout: "pipe",
        stderr: "pipe",
      },
    ),
  );
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const line = out.split("\n").find((l) => l.startsWith("RESULT "));
  if (!line)
    return {
      skipped: `could not run in a network namespace (exit ${code}): ${err.trim().split("\n").slice(-3).join(" / ")}`,
    };
  return {
    ...JSON.parse(line.slice(7)),
    attackers: `${sources.length} addresses of one IPv6 /64 × 64 silent connections each`,
  };
}

async function idle(): Promise<Record<string, unknown>> {
  const fleet = makeFleet(join(dir, "idle"));
  const node = await serve(fleet.alpha, ["--plain-http-port", "0", "--admin-port", "0"], {
    plain: /^plain-HTTP listener open/,
    admin: /^admin port open/,
  });
  const plainPort = Number(new URL(node.urls.plain).port);
  const fdsBefore = fdCount(node.pid);
  const holders = [0, 1].map(() =>
    track(
      Bun.spawn(
        [
          process.execPath,
          import.meta.path,
          "--role",
          "hold-idle",
          JSON.stringify({ port: plainPort, host: "127.0.0.1", count: 10_000 }),
        ],
        {
          stdout: "pipe",
          stderr: "inherit",
        },
      ),
    ),
  );
  const held = await Promise.all(
    holders.map(async (h) => {
      const reader = (h.stdout as ReadableStream<Uint8Array>).getReader();
      const { value } = await reader.read();
      return JSON.parse(new TextDecoder().decode(value)) as { connected: number; failed: number; open: number };
    }),
  );
  // The clients are connected; the node may still be accepting them: wait until its descriptors stop growing.
  let fdsDuring = fdCount(node.pid);
  for (let i = 0; i < 40; i++) {
    await sleep(500);
    const now = fdCount(node.pid);
    if (now === fdsDuring) break;
    fdsDuring = now;
  }
  const member: (number | string)[] = [];
  for (let i = 0; i < 10; i++)
    member.push(await request(node.urls.mtls, { tls: fleet.tls, path: "/health", timeoutMs: 3000 }));
  const ready = await request(node.urls.admin, { path: "/health/ready", timeoutMs: 3000 });
  const plainAnswer = await request(node.urls.plain, { path: "/health", timeoutMs: 3000 });
  const metricsDuring = await scrape(node.urls.admin);
  for (const h of holders) await stop(h, 200);
  await sleep(1000);
  const metricsAfter = await scrape(node.urls.admin);
  const logged = node
    .lines()
    .filter((l) => /descriptor|too many connections|EMFILE/i.test(`${l.msg} ${l.reason ?? ""} ${l.kind ?? ""}`));
  await stop(node.proc);
  const sum = (k: keyof (typeof held)[0]) => held.reduce((a, h) => a + h[k], 0);
  return {
    attack: "20,000 idle TCP connections to the plain loopback port (2 processes × 10,000)",
    clientConnected: sum("connected"),
    clientStillOpenAfter3s: sum("open"),
    nodeFdsBefore: fdsBefore,
    nodeFdsDuring: fdsDuring,
    nodeMaxFds: metric(metricsAfter || metricsDuring, "process_max_fds"),
    memberOnMtls: tally(member),
    adminReady: ready,
    plainHealth: plainAnswer,
    metricsScrapedDuringFlood: metricsDuring !== "",
    logLines: logged.length,
    firstLogLines: logged.slice(0, 3).map((l) => `${l.level} ${l.msg} ${l.kind ?? ""} ${l.reason ?? ""}`.trim()),
  };
}

/** A pipelining flood client: `conns` keep-alive connections, each with `depth` requests in flight. */
async function flood(
  url: string,
  build: () => string,
  seconds: number,
  conns = 8,
  depth = 16,
  tls?: Fleet["tls"] | true,
): Promise<Record<string, number>> {
  const u = new URL(url);
  const statuses: Record<string, number> = {};
  const end = Date.now() + seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      const s: Socket =
        u.protocol === "https:"
          ? tlsConnect({
              host: u.hostname,
              port: Number(u.port),
              ...(tls === true ? {} : (tls ?? {})),
              rejectUnauthorized: false,
              checkServerIdentity: () => undefined,
            })
          : tcpConnect({ host: u.hostname, port: Number(u.port) });
      let buf = "";
      let inFlight = 0;
      const send = () => {
        while (inFlight < depth && Date.now() < end) {
          s.write(build());
          inFlight++;
        }
        if (inFlight === 0) s.end();
      };
      s.on(u.protocol === "https:" ? "secureConnect" : "connect", send);
      s.on("data", (d) => {
        buf += d.toString("latin1");
        for (;;) {
          const m = /HTTP\/1\.1 (\d{3})[^]*?\r\ncontent-length: (\d+)\r\n[^]*?\r\n\r\n/i.exec(buf);
          if (!m) break;
          const end = m.index + m[0].length + Number(m[2]);
          if (buf.length < end) break;
          statuses[m[1]] = (statuses[m[1]] ?? 0) + 1;
          buf = buf.slice(end);
          inFlight--;
        }
        send();
      });
      s.on("error", () => {});
      s.on("close", () => resolve());
    });
  await Promise.all(
    Array.from({ length: conns }, async () => {
      while (Date.now() < end) await one();
    }),
  );
  return statuses;
}

function auditLines(home: string): Record<string, unknown>[] {
  const files = readdirSync(home).filter((f) => f.startsWith("audit.jsonl"));
  return files.flatMap((f) =>
    readFileSync(join(home, f), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

async function tokens(): Promise<Record<string, unknown>> {
  const fleet = makeFleet(join(dir, "tokens"));
  const token = JSON.parse(cli(fleet.alpha, "tokens", "add", "carol", "--json")).token as string;
  // A 1 MiB audit file (5 kept) instead of 10 MiB: the same rotation, ten times sooner.
  const node = await serve(
    fleet.alpha,
    ["--token-port", "0", "--token-tls", "off", "--audit-log-max-bytes", "1048576"],
    { token: /^token listener open/ },
  );
  const rpc = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} });
  const headers = (t: string) => ({ authorization: `Bearer ${t}`, "a2a-version": "1.0" });
  const accepted = await request(node.urls.token, { path: "/", method: "POST", headers: headers(token), body: rpc });
  const firstRefusal = await request(node.urls.token, {
    path: "/",
    method: "POST",
    headers: headers("a2a_first-refusal"),
    body: rpc,
  });
  await sleep(500);
  const host = new URL(node.urls.token).host;
  const req = `POST / HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer a2a_flood\r\ncontent-type: application/json\r\ncontent-length: ${rpc.length}\r\n\r\n${rpc}`;
  const cpu0 = cpuTicks(node.pid);
  const t0 = performance.now();
  const statuses = await flood(node.urls.token, () => req, args.seconds);
  const secs = (performance.now() - t0) / 1000;
  const cpu = (cpuTicks(node.pid) - cpu0) / CLK_TCK / secs;
  await stop(node.proc);
  const lines = auditLines(fleet.alpha);
  const refusedLines = lines.filter((l) => l.event === "refused");
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0);
  return {
    accepted,
    firstRefusal,
    floodRequests: sent,
    floodPerSecond: Math.round(sent / secs),
    floodStatuses: statuses,
    nodeCpuCores: Math.round(cpu * 100) / 100,
    auditFiles: readdirSync(fleet.alpha).filter((f) => f.startsWith("audit.jsonl")).length,
    auditLines: lines.length,
    auditRefusedLines: refusedLines.length,
    auditRefusedCounted: refusedLines.reduce((a, l) => a + (typeof l.more === "number" ? l.more : 1), 0),
    acceptedCallSurvived: lines.some((l) => l.event === "call" && l.peer === "token:carol" && l.outcome === "ok"),
    firstRefusalSurvived: lines.some((l) => l.event === "refused" && String(l.reason ?? "").includes("token")),
    refusalsRecordedAsRevoked: refusedLines.filter((l) => l.kind === "revoked").length,
    kinds: tally(refusedLines.map((l) => String(l.kind))),
  };
}

async function enroll(): Promise<Record<string, unknown>> {
  const fleet = makeFleet(join(dir, "enroll"));
  const node = await serve(fleet.alpha, ["--enroll-port", "0"], { enroll: /^enrollment port open/ });
  const body = JSON.stringify({
    token: `gamma.${"A".repeat(43)}`,
    csr: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
  });
  const host = new URL(node.urls.enroll).host;
  const req = `POST /pki/enroll HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  const j0 = node.journalBytes();
  const cpu0 = cpuTicks(node.pid);
  const t0 = performance.now();
  const statuses = await flood(node.urls.enroll, () => req, args.seconds, 8, 16, true);
  const secs = (performance.now() - t0) / 1000;
  const cpu = (cpuTicks(node.pid) - cpu0) / CLK_TCK / secs;
  const journal = node.journalBytes() - j0;
  await stop(node.proc);
  const lines = auditLines(fleet.alpha).filter((l) => String(l.kind ?? "").startsWith("enroll"));
  const failed = statuses["403"] ?? 0;
  return {
    requests: Object.values(statuses).reduce((a, b) => a + b, 0),
    statuses,
    failedEnrollmentsPerSecond: Math.round(failed / secs),
    nodeCpuCores: Math.round(cpu * 100) / 100,
    journalBytesPerSecond: Math.round(journal / secs),
    journalLines: node.lines().filter((l) => /enrol/i.test(String(l.msg))).length,
    auditEnrollmentLines: lines.length,
    auditEnrollmentCounted: lines.reduce((a, l) => a + (typeof l.more === "number" ? l.more : 1), 0),
  };
}

async function pki(): Promise<Record<string, unknown>> {
  const fleet = makeFleet(join(dir, "pki"));
  // A revocation list to serve: issue gamma and revoke it.
  cli(fleet.alpha, "pki", "issue", "gamma", "--out", join(dir, "pki", "gamma.bundle"));
  cli(fleet.alpha, "pki", "revoke", "gamma");
  const node = await serve(fleet.alpha, [], {});
  const host = new URL(node.urls.mtls).host;
  const crlReq = `GET /pki/crl HTTP/1.1\r\nhost: ${host}\r\n\r\n`;
  const secs = Math.min(args.seconds, 10);
  let t0 = performance.now();
  const crl = await flood(node.urls.mtls, () => crlReq, secs, 4, 8, fleet.tls);
  const crlSecs = (performance.now() - t0) / 1000;
  const { createCsr } = await import("../pki");
  const csrs = await Promise.all(Array.from({ length: 64 }, () => createCsr({ name: "beta", sans: [] })));
  let n = 0;
  const renewReq = () => {
    const body = JSON.stringify({ csr: csrs[n++ % csrs.length].csrPem, cert: fleet.tls.cert });
    return `POST /pki/renew HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const cpu0 = cpuTicks(node.pid);
  t0 = performance.now();
  const renew = await flood(node.urls.mtls, renewReq, secs, 2, 4, fleet.tls);
  const renewSecs = (performance.now() - t0) / 1000;
  const cpu = (cpuTicks(node.pid) - cpu0) / CLK_TCK / renewSecs;
  await stop(node.proc);
  const minted = cli(fleet.alpha, "pki", "list", "--json");
  const renewed = (JSON.parse(minted) as { name: string; how: string }[]).filter(
    (c) => c.name === "beta" && c.how === "renew",
  ).length;
  return {
    crlStatuses: crl,
    crlServedPerSecond: Math.round((crl["200"] ?? 0) / crlSecs),
    renewStatuses: renew,
    certificatesMinted: renewed,
    renewSeconds: Math.round(renewSecs * 10) / 10,
    renewNodeCpuCores: Math.round(cpu * 100) / 100,
  };
}

// ---------------------------------------------------------------------------------------------------------

if (args.role === "silent6-inner") {
  // Inside the namespace: a whole silent scenario over IPv6.
  const r = await silentScenario(JSON.parse(args.roleArg as string) as SilentConfig);
  console.log(`RESULT ${JSON.stringify(r)}`);
  process.exit(0);
}

if (!args.role) {
  if (!existsSync(args.binary)) usage(`${args.binary} is missing: run 'npm run build', or give --binary`);
  const results: Record<string, unknown> = {};
  const run: Record<Scenario, () => Promise<Record<string, unknown>>> = { silent, silent6, idle, tokens, enroll, pki };
  for (const name of args.only) {
    process.stderr.write(`${name}...\n`);
    try {
      results[name] = await run[name]();
    } catch (err) {
      results[name] = { error: (err as Error).message };
    }
    console.log(`${name}: ${JSON.stringify(results[name], null, 2)}`);
  }
  if (args.json)
    writeFileSync(args.json, JSON.stringify({ binary: args.binary, seconds: args.seconds, results }, null, 2));
  process.exit(0);
}
