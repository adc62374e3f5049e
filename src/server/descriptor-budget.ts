import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import type { ConnectionLimits } from "./connection-limits";
import type { CheckResult } from "./readiness";

/**
 * Descriptors kept for everything but the listeners' connections: the database and its WAL (and the workers'
 * own connections), the audit log, calls to the model, Hermes, webhooks and peers, the listening sockets, the
 * runtime's own, and the moment a connection over a cap is accepted only to be closed.
 */
export const RESERVED_DESCRIPTORS = 256;

/** Fewer descriptors than this per listener and the node refuses to start: it could serve next to no one. */
const MIN_PER_LISTENER = 8;

/** The soft RLIMIT_NOFILE of this process (Bun raises it to the hard limit at start); undefined off Linux. */
export function descriptorLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    if (!m) return undefined;
    return m[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** Descriptors this process holds open now (undefined off Linux, or when none is left to list them with). */
export function openDescriptors(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length - 1; // less the one the listing itself held
  } catch {
    return undefined;
  }
}

export interface FittedCaps<T> {
  caps: T;
  /** The descriptors the listeners' caps add up to, as configured. */
  needed: number;
  /** What the limit leaves them (the limit less RESERVED_DESCRIPTORS); undefined when the limit is unknown. */
  available: number | undefined;
  /** The caps were lowered to fit. */
  lowered: boolean;
}

/**
 * Every listener's caps, lowered in proportion when together they could hold more connections than the
 * descriptor limit leaves after RESERVED_DESCRIPTORS: no listener, however flooded, can then take the
 * descriptors the others (and the database) need. Throws when the limit is too low to serve at all.
 */
export function fitToDescriptors<T extends { [listener: string]: ConnectionLimits | undefined }>(
  caps: T,
  limit: number | undefined,
): FittedCaps<T> {
  const entries = Object.entries(caps).filter((e): e is [string, ConnectionLimits] => e[1] !== undefined);
  const needed = entries.reduce((sum, [, c]) => sum + c.maxConnections, 0);
  if (limit === undefined || !Number.isFinite(limit)) return { caps, needed, available: undefined, lowered: false };
  const available = limit - RESERVED_DESCRIPTORS;
  if (needed <= available) return { caps, needed, available, lowered: false };
  if (available < MIN_PER_LISTENER * entries.length)
    throw new Error(
      `the file descriptor limit (RLIMIT_NOFILE ${limit}) is too low to serve: ${RESERVED_DESCRIPTORS} are kept for the database, logs and outgoing calls, and each of the ${entries.length} listeners needs at least ${MIN_PER_LISTENER}; raise it (systemd: LimitNOFILE=65536; a shell: ulimit -n 65536)`,
    );
  const factor = available / needed;
  const fitted: { [listener: string]: ConnectionLimits } = {};
  for (const [name, c] of entries) {
    const maxConnections = Math.max(MIN_PER_LISTENER, Math.floor(c.maxConnections * factor));
    fitted[name] = {
      maxConnections,
      // A per-source cap at or past the total (a loopback listener's: one source) stays out of the way.
      maxConnectionsPerAddress:
        c.maxConnectionsPerAddress >= c.maxConnections
          ? c.maxConnectionsPerAddress
          : Math.min(c.maxConnectionsPerAddress, maxConnections),
      ...(c.maxHandshakes === undefined
        ? {}
        : { maxHandshakes: Math.min(maxConnections, Math.max(1, Math.floor(c.maxHandshakes * factor))) }),
    };
  }
  return { caps: fitted as T, needed, available, lowered: true };
}

export interface DescriptorState {
  /** The last check found no descriptor free. */
  exhausted: boolean;
  /** How many times descriptors ran out (a run of failed checks counts once). */
  exhaustions: number;
  /** When they last ran out. */
  lastExhaustedAt?: Date;
  /** The descriptor limit as last read (it can be changed under a running process: prlimit). */
  limit?: number;
}

/**
 * Notices when the process has run out of file descriptors. Under Bun a listener that cannot accept (EMFILE,
 * ENFILE) says nothing at all: no error event, the pending connections just wait in the kernel while the
 * accept loop spins. So once a second this opens /dev/null and closes it again (one cheap system call pair):
 * when that fails for want of a descriptor, so does every accept. Told once per run of failures, and again
 * when descriptors are free.
 */
export class DescriptorWatch {
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly s: DescriptorState = { exhausted: false, exhaustions: 0 };
  /** When the current run of failed checks began. */
  private since = 0;

  constructor(
    private readonly o: {
      intervalMs?: number;
      onExhausted(code: string): void;
      onRecovered(lastedMs: number): void;
      now?: () => number;
    },
  ) {}

  start(): void {
    this.check();
    this.timer = setInterval(() => this.check(), this.o.intervalMs ?? 1000);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  state(): DescriptorState {
    return { ...this.s };
  }

  /** Looks now; true while descriptors are exhausted. */
  check(): boolean {
    let code: string | undefined;
    try {
      closeSync(openSync("/dev/null", "r"));
      this.s.limit = descriptorLimit() ?? this.s.limit;
    } catch (err) {
      const c = (err as NodeJS.ErrnoException).code;
      if (c === "EMFILE" || c === "ENFILE") code = c;
    }
    const now = this.o.now?.() ?? Date.now();
    if (code && !this.s.exhausted) {
      this.s.exhausted = true;
      this.s.exhaustions++;
      this.s.lastExhaustedAt = new Date(now);
      this.since = now;
      this.o.onExhausted(code);
    } else if (code) this.s.lastExhaustedAt = new Date(now);
    else if (this.s.exhausted) {
      this.s.exhausted = false;
      this.o.onRecovered(now - this.since);
    }
    return this.s.exhausted;
  }
}

/** How long after running out the readiness detail still says when it last happened. */
const REMEMBER_MS = 10 * 60_000;

/**
 * The readiness check: failed while the process has no descriptor free (nothing can connect to it, on any
 * listener); otherwise how many are open of how many, and when they last ran out if that was recent.
 */
export function descriptorCheck(
  state: DescriptorState,
  limit: number | undefined,
  open: number | undefined,
  now = Date.now(),
): CheckResult {
  const facts = { open, limit, exhaustions: state.exhaustions, lastExhaustedAt: state.lastExhaustedAt?.toISOString() };
  const next = "raise the limit (systemd: LimitNOFILE; a shell: ulimit -n) or lower max_connections";
  if (state.exhausted)
    return {
      ok: false,
      detail: `out of file descriptors (limit ${limit ?? "unknown"}): no listener can accept a connection; ${next}`,
      ...facts,
    };
  const recent =
    state.lastExhaustedAt && now - state.lastExhaustedAt.getTime() < REMEMBER_MS
      ? `; ran out at ${state.lastExhaustedAt.toISOString()}`
      : "";
  return { ok: true, detail: `${open ?? "?"} of ${limit ?? "?"} file descriptors open${recent}`, ...facts };
}
