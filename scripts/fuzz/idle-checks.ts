/**
 * After the inputs: the node, left idle, against itself after warm-up. Connections it has finished with may
 * linger until its idle timer (65 s) ends them; whatever it still holds after that leaked. Then every task it
 * named must be on disk and finished, it must answer a valid SendMessage right on both listeners, and stop
 * cleanly on SIGTERM.
 */
import { readFileSync } from "node:fs";
import { checkAnswer } from "../bench/rpc";
import { call, userMessage } from "./calls";
import type { FuzzInput, Listener } from "./input";
import type { Tally } from "./report";
import type { FuzzSession } from "./session";
import { describeSocket, missingTasks, NODE_TIMEOUTS_MS, taskCensus, type ProcStats, type SocketInfo } from "./target";

export interface Baseline {
  pid: number;
  stats: ProcStats;
  /** Inodes of the sockets the node had after warm-up. */
  sockets: Set<string>;
}

export function takeBaseline(s: FuzzSession): Baseline {
  return { pid: s.node.pid, stats: s.node.stats(), sockets: new Set(s.node.sockets().map((x) => x.inode)) };
}

export interface IdleReport {
  resources: { baseline: Resources; after: Resources & { openConnections: number }; sameProcess: boolean };
  /** Sockets the node still held 10 s after the run, and when (if ever) it was idle. */
  lingering: { idleAfterS: number | null; socketsAfter10s: string[] };
  tasks: { byState: Record<string, number>; acknowledged: number; missing: number };
  push: { deliveredToSink: number; pendingDeliveries: number };
  nodeErrorLines: string[];
}
type Resources = { rssMiB: number; fds: number; sockets: number };

const QUICK_MS = 10_000;
/** Descriptors a node may open lazily after warm-up (a checkpoint worker's database files) without leaking. */
const FD_SLACK = 4;
const mib = (b: number) => Math.round(b / 2 ** 20);

export async function checkIdleNode(
  s: FuzzSession,
  base: Baseline,
  o: {
    tally: Tally;
    hangMs: number;
    rssLimitBytes: number;
    seed: number;
    generate(index: number): FuzzInput;
    progress(line: string): void;
  },
): Promise<IdleReport> {
  const { tally } = o;
  const runEnded = performance.now();
  const quick = await s.settle(base.stats, QUICK_MS);
  // New sockets other than listening ones (a restarted node has new listeners) and the node's unix sockets.
  const newSockets = (): SocketInfo[] =>
    s.node.sockets().filter((x) => !base.sockets.has(x.inode) && x.state !== "LISTEN" && x.kind !== "unix");
  const lingering = quick === undefined ? newSockets().map(describeSocket) : [];
  if (quick === undefined)
    o.progress(
      `fuzz: ${lingering.length} sockets still open ${QUICK_MS / 1000} s after the run; waiting for the node's idle timer`,
    );
  const rest = quick === undefined ? await s.settle(base.stats, NODE_TIMEOUTS_MS.idle + o.hangMs - QUICK_MS) : 0;
  const idleAfterS = quick ?? (rest === undefined ? undefined : rest + QUICK_MS / 1000);
  o.progress(
    idleAfterS === undefined
      ? "fuzz: the node did not become idle"
      : `fuzz: idle ${idleAfterS.toFixed(1)} s after the run`,
  );

  const node = s.node;
  const after = node.stats();
  const connections = node.openConnections();
  const sameProcess = node.pid === base.pid;
  const since = `${((performance.now() - runEnded) / 1000).toFixed(0)} s after the run`;
  const extra = newSockets();
  if (sameProcess && after.rssBytes - base.stats.rssBytes > o.rssLimitBytes)
    tally.fail(
      "leak-rss",
      `RSS ${mib(base.stats.rssBytes)} MiB after warm-up, ${mib(after.rssBytes)} MiB ${since}, idle (limit +${mib(o.rssLimitBytes)} MiB)`,
    );
  if (sameProcess && after.sockets > base.stats.sockets)
    tally.fail(
      "leak-fds",
      `${after.sockets} sockets open ${since}, against ${base.stats.sockets} after warm-up; the new ones: ${extra.map(describeSocket).join("; ")}`,
    );
  if (sameProcess && after.fds > base.stats.fds + FD_SLACK)
    tally.fail("leak-fds", `${after.fds} descriptors open ${since}, against ${base.stats.fds} after warm-up`);
  if (connections > 0) {
    // The inputs whose connections the node still holds, found by our end's port, become the samples.
    const holders = extra
      .map((x) => (x.listener && x.peerPort !== undefined ? s.portOwner.get(`${x.listener}:${x.peerPort}`) : undefined))
      .filter((i): i is number => i !== undefined)
      .sort((a, b) => a - b);
    const kinds: Record<string, number> = {};
    for (const i of holders) {
      const kind = o.generate(i).labels.join(" ");
      kinds[kind] = (kinds[kind] ?? 0) + 1;
    }
    tally.fail(
      "leak-connections",
      `${connections} connections still held by the node ${since}, made by inputs ${JSON.stringify(kinds)} (${holders.join(",")}); ` +
        `each sample is one of them: ${extra
          .filter((x) => x.listener)
          .map(describeSocket)
          .join("; ")}`,
      holders.slice(0, 5).map(o.generate),
    );
  }

  const census = taskCensus(s.fleet.home);
  if (census.unfinished > 0)
    tally.fail(
      "stuck-tasks",
      `${census.unfinished} tasks still SUBMITTED or WORKING with the echo executor, idle: ${JSON.stringify(census.byState)}`,
    );
  for (const e of await liveness(s, o.seed)) tally.fail("liveness", e);
  const ids = [...s.acknowledged.mtls, ...s.acknowledged.plain];
  const missing = missingTasks(s.fleet.home, ids);
  if (missing.length > 0)
    tally.fail(
      "lost-tasks",
      `${missing.length} of ${ids.length} tasks the node named are not in its database: ${missing.slice(0, 5).join(", ")}`,
    );

  const delivered = s.sink.deliveries();
  const stop = await s.stop();
  if (stop && (stop.code !== 0 || stop.killed))
    tally.fail(
      "unclean-stop",
      stop.killed ? "the node did not stop within 20 s of SIGTERM" : `the node exited ${stop.code} on SIGTERM`,
    );
  const nodeErrorLines = readFileSync(s.logPath, "utf8")
    .split("\n")
    .filter((l) => / error |^a2a-node: .* failed/.test(l));

  return {
    resources: {
      baseline: { rssMiB: mib(base.stats.rssBytes), fds: base.stats.fds, sockets: base.stats.sockets },
      after: { rssMiB: mib(after.rssBytes), fds: after.fds, sockets: after.sockets, openConnections: connections },
      sameProcess,
    },
    lingering: {
      idleAfterS: idleAfterS === undefined ? null : Math.round(idleAfterS * 10) / 10,
      socketsAfter10s: lingering,
    },
    tasks: { byState: census.byState, acknowledged: ids.length, missing: missing.length },
    push: { deliveredToSink: delivered, pendingDeliveries: census.pendingDeliveries },
    nodeErrorLines,
  };
}

/** A valid SendMessage on each listener must come back COMPLETED with its text echoed, and be found by GetTask. */
async function liveness(s: FuzzSession, seed: number): Promise<string[]> {
  const errors: string[] = [];
  for (const listener of ["mtls", "plain"] as Listener[]) {
    const text = `liveness ${listener} ${seed}`;
    const e = s.endpoint(s.node, listener);
    try {
      const r = await call(listener, e, {
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: { message: userMessage(`liveness-${listener}-${Date.now()}`, text) },
      });
      const wrong = checkAnswer(r.status, r.text, text);
      if (wrong) {
        errors.push(`${listener}: ${wrong}`);
        continue;
      }
      const id = r.json.result.task.id;
      s.acknowledged[listener].add(id);
      const got = await call(listener, e, { jsonrpc: "2.0", id: 2, method: "GetTask", params: { id } });
      if (got.json?.result?.status?.state !== "TASK_STATE_COMPLETED")
        errors.push(`${listener}: GetTask after SendMessage: ${got.text.slice(0, 200)}`);
    } catch (err) {
      errors.push(`${listener}: ${(err as Error).message}`);
    }
  }
  return errors;
}
