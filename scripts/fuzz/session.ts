/**
 * One fuzz session against one node home: the node process (restarted after a crash, the crash counted), the
 * webhook sink, the tasks inputs refer to, and the sending and judging of each input. What a caller was told
 * is remembered here, so that the other caller never sees it and the database can be checked for it after.
 */
import { join } from "node:path";
import { judge, type Verdict } from "./classify";
import { call, get, userMessage } from "./calls";
import { generateInput, isIncomplete, type FuzzInput, type GenerateOptions, type Listener } from "./input";
import type { Tally } from "./report";
import { makeFleet, NODE_TIMEOUTS_MS, NodeProcess, startSink, taskCensus, type Fleet, type ProcStats } from "./target";
import { checkRuntime, POOL_SIZE, render, type Runtime } from "./tokens";
import { send, type Endpoint, type Outcome } from "./wire";

export interface SessionOptions {
  dir: string;
  gen: GenerateOptions;
  /** No answer and no close for this long is a hang. */
  hangMs: number;
  tally: Tally;
  progress(line: string): void;
}

/** More crashes than this and the run gives up: the node is not worth fuzzing further until fixed. */
const MAX_CRASHES = 5;
/** Hung connections watched at once to learn whether the node ends them later (each holds a connection). */
const MAX_LATE_WATCHERS = 8;

export const other = (l: Listener): Listener => (l === "mtls" ? "plain" : "mtls");

export class FuzzSession {
  readonly logPath: string;
  readonly sink = startSink();
  fleet!: Fleet;
  node!: NodeProcess;
  /** Resolves to the running node; replaced while a crashed one is restarted. */
  private ready!: Promise<NodeProcess>;
  private epoch = 0;
  private stopping = false;
  private aborted = false;
  private readonly inFlight = new Map<number, FuzzInput>();
  readonly crashes: { exit: string; inFlight: number[] }[] = [];
  /** Task ids each caller was told about: the other caller must never see them; all must be on disk at the end. */
  readonly acknowledged: Record<Listener, Set<string>> = { mtls: new Set(), plain: new Set() };
  private readonly pools: Record<Listener, { tasks: string[]; contexts: string[] }> = {
    mtls: { tasks: [], contexts: [] },
    plain: { tasks: [], contexts: [] },
  };
  /** The input that last used each of our ports, per listener: a connection the node keeps names its input. */
  readonly portOwner = new Map<string, number>();
  /** Connections that timed out, watched to see whether the node ends them by itself. */
  readonly late: Promise<number | undefined>[] = [];
  private lateWatchers = 0;

  constructor(private readonly o: SessionOptions) {
    this.logPath = join(o.dir, "node.log");
  }

  /** A fresh fleet and home, the node serving, and the tasks and webhooks inputs refer to. */
  async start(): Promise<void> {
    this.fleet = makeFleet(this.o.dir);
    this.node = await this.spawn();
    this.ready = Promise.resolve(this.node);
    await this.makePools();
  }

  endpoint(n: NodeProcess, listener: Listener): Endpoint {
    return { port: n.ports[listener], identity: this.fleet.client, foreign: this.fleet.foreign };
  }

  runtime(n: NodeProcess, listener: Listener): Runtime {
    const own = this.pools[listener];
    return {
      ownTasks: own.tasks,
      foreignTasks: this.pools[other(listener)].tasks,
      ownContexts: own.contexts,
      listenerPort: n.ports[listener],
      sinkPort: this.sink.port,
    };
  }

  private async spawn(): Promise<NodeProcess> {
    const n = await NodeProcess.start(this.fleet.home, this.logPath, {
      sinkPort: this.sink.port,
      maxBody: this.o.gen.maxBody,
    });
    void n.proc.exited.then(() => {
      if (this.stopping || n !== this.node) return;
      // A crash: note what was in flight, start the node again on the same home, go on.
      this.epoch++;
      const inFlight = [...this.inFlight.values()];
      this.crashes.push({ exit: n.exit, inFlight: inFlight.map((i) => i.index) });
      this.o.tally.fail(
        "crash",
        `the node exited (${n.exit}) with ${inFlight.length} inputs in flight; log: ${this.logPath}`,
        inFlight,
      );
      this.o.progress(
        `fuzz: the node exited (${n.exit}) with inputs ${inFlight.map((i) => i.index).join(",")} in flight; restarting it`,
      );
      this.ready =
        this.crashes.length > MAX_CRASHES
          ? Promise.reject(new Error(`more than ${MAX_CRASHES} crashes: giving up`))
          : this.spawn().then((fresh) => (this.node = fresh));
      this.ready.catch(() => {});
    });
    return n;
  }

  /** Tasks (and so conversations) for each caller, and webhooks on some of them, for inputs to refer to. */
  private async makePools(): Promise<void> {
    const n = this.node;
    for (const listener of ["mtls", "plain"] as const) {
      const pool = this.pools[listener];
      for (let i = 0; i < POOL_SIZE; i++) {
        const r = await call(listener, this.endpoint(n, listener), {
          jsonrpc: "2.0",
          id: i,
          method: "SendMessage",
          params: { message: userMessage(`pool-${i}`, `pool task ${i}`) },
        });
        const task = r.json?.result?.task;
        if (!task?.id)
          throw new Error(`warm-up SendMessage on ${listener} failed: ${r.status} ${r.text.slice(0, 300)}`);
        pool.tasks.push(task.id);
        pool.contexts.push(task.contextId);
        this.acknowledged[listener].add(task.id);
      }
      for (let i = 0; i < 4; i++) {
        const params = { taskId: pool.tasks[i], id: `cfg-${i}`, url: `http://127.0.0.1:${this.sink.port}/hook/pool` };
        const r = await call(listener, this.endpoint(n, listener), {
          jsonrpc: "2.0",
          id: i,
          method: "CreateTaskPushNotificationConfig",
          params,
        });
        if (!r.json?.result)
          throw new Error(`warm-up CreateTaskPushNotificationConfig on ${listener} failed: ${r.text.slice(0, 300)}`);
      }
      checkRuntime(this.runtime(n, listener));
    }
  }

  /**
   * Inputs of another seed, not counted, so that the baseline after it is a node that has seen every kind of
   * request. Small ones only: a connection cut while megabytes are on their way can linger, and the baseline
   * must be a node at rest.
   */
  async warmUp(seed: number, count: number): Promise<void> {
    const warmSeed = (seed ^ 0x5eed5eed) >>> 0;
    const inputs = Array.from({ length: count }, (_, i) => i)
      .filter((i) => !isIncomplete(warmSeed, i))
      .map((i) => generateInput(warmSeed, i, this.o.gen))
      .filter((input) => input.pieces.reduce((n, p) => n + p.bytes.length, 0) <= 32 * 1024);
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let k = w; k < inputs.length; k += 8) await this.runOne(inputs[k], false);
      }),
    );
    await Promise.all(this.late);
    await this.warmLazyRoutes();
  }

  /**
   * /health/ready and /metrics start a worker thread on first use (the database probe, which also reads the
   * tasks-by-state gauge): its descriptors are the node's from then on, not a leak. The warm-up inputs may
   * not happen to ask for both, so both are asked for here, on both listeners, before the baseline is taken.
   */
  private async warmLazyRoutes(): Promise<void> {
    const n = await this.ready;
    for (const listener of ["mtls", "plain"] as const)
      for (const path of ["/health/ready", "/metrics"]) {
        const r = await get(listener, this.endpoint(n, listener), path);
        // 503 is an answer too (the echo executor's model check has nothing to ask): only no answer is wrong.
        if (r.status !== 200 && r.status !== 503)
          throw new Error(`warm-up GET ${path} on ${listener} answered ${r.status}: ${r.text.slice(0, 200)}`);
      }
  }

  /** Sends one input and judges the outcome; inputs that overlapped a crash are only counted as such. */
  async runOne(input: FuzzInput, count: boolean): Promise<{ outcome: Outcome; verdict: Verdict } | undefined> {
    const n = await this.ready;
    const startEpoch = this.epoch;
    const pieces = input.pieces.map((p) => render(p.bytes, this.runtime(n, input.listener)));
    const deadlineMs = input.nodeTimeout ? NODE_TIMEOUTS_MS[input.nodeTimeout] + this.o.hangMs : undefined;
    const lateWatchMs = this.lateWatchers < MAX_LATE_WATCHERS ? NODE_TIMEOUTS_MS.idle : 0;
    this.inFlight.set(input.index, input);
    let outcome: Outcome;
    try {
      outcome = await send(input, pieces, this.endpoint(n, input.listener), {
        quietMs: this.o.hangMs,
        deadlineMs,
        lateWatchMs,
      });
    } finally {
      this.inFlight.delete(input.index);
    }
    if (outcome.localPort !== undefined && count)
      this.portOwner.set(`${input.listener}:${outcome.localPort}`, input.index);
    if (outcome.late) {
      this.lateWatchers++;
      this.late.push(outcome.late.finally(() => this.lateWatchers--));
    }
    if (this.epoch !== startEpoch || !n.running) {
      if (count) this.o.tally.crashAffected++;
      return undefined;
    }
    const verdict = judge(input, outcome, this.acknowledged[other(input.listener)]);
    // A refused connection may be the node's connection limit, filled by connections it failed to let go of.
    if (verdict.findings.includes("dropped") && outcome.end === "refused")
      verdict.detail += `; the node held ${n.openConnections()} connections to its listeners just after`;
    for (const id of verdict.taskIds) this.acknowledged[input.listener].add(id);
    if (outcome.late && count) {
      // Tell a node that waits for bytes it will never get (and ends it by its timer) from one that is stuck.
      void outcome.late.then((ms) => {
        const s = this.o.tally.samples.find((x) => x.index === input.index && x.kind === "hang");
        if (s)
          s.detail +=
            ms === undefined
              ? "; the node had not closed it 65 s later either"
              : `; the node closed it ${(ms / 1000).toFixed(1)} s after the start`;
      });
    }
    if (count) this.o.tally.add(input, verdict, outcome.ms, outcome.error);
    return { outcome, verdict };
  }

  /** Runs `indices` with `width` in flight at once, in order; stops early if the node cannot be restarted. */
  async lane(
    indices: number[],
    width: number,
    generate: (index: number) => FuzzInput,
    onDone: () => void,
  ): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < indices.length && !this.aborted) {
        await this.runOne(generate(indices[next++]), true);
        onDone();
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(width, indices.length) }, worker));
    } catch (err) {
      this.aborted = true;
      throw err;
    }
  }

  /**
   * Polls until the node is idle: no connection open, no task unfinished, no more sockets than `baseline`.
   * Resolves with the seconds it took, or undefined if it was not idle within `limitMs`.
   */
  async settle(baseline: ProcStats | undefined, limitMs: number): Promise<number | undefined> {
    const since = performance.now();
    while (performance.now() - since < limitMs) {
      const n = this.node;
      if (
        n.openConnections() === 0 &&
        taskCensus(this.fleet.home).unfinished === 0 &&
        (!baseline || n.stats().sockets <= baseline.sockets)
      )
        return (performance.now() - since) / 1000;
      await Bun.sleep(100);
    }
    return undefined;
  }

  /** Stops the node (SIGTERM, as a service manager would) and the sink. */
  async stop(graceMs?: number): Promise<{ code: number | null; killed: boolean } | undefined> {
    this.stopping = true;
    const result = this.node?.running ? await this.node.stop(graceMs) : undefined;
    this.sink.stop();
    return result;
  }
}
