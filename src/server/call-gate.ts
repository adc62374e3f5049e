import { PERMISSION_DENIED_CODE } from "../protocol/errors";
import type { CallContext, CallerIdentity } from "../rpc/caller";
import type { Admission, AnswerBudget } from "./answer-budget";
import type { AuditCall } from "./audit-log";
import type { PeerRateLimiter } from "./rate-limit";

/** The A2A bindings, as the audit log and the metrics name them. */
export type A2ABinding = "jsonrpc" | "http-json" | "grpc";

/** What the gate reports, for the node's metrics. Called on every call: implementations only count. */
export interface RouterMetrics {
  /** An A2A request (any binding) was answered (a stream: its head sent); `method` undefined for one not served. */
  rpc(method: string | undefined, seconds: number, errorCode: number | undefined): void;
  streamOpened(): void;
  streamClosed(): void;
  rateLimited(peer: string, retryAfterSeconds: number): void;
}

export interface CallGateOptions {
  /** Per-peer rate limit on A2A calls (every binding), checked once the caller is known, before anything is parsed. */
  limiter?: PeerRateLimiter;
  metrics?: RouterMetrics;
  /** Told of every A2A call once it is answered, for the audit log. */
  audit?(call: AuditCall): void;
  /** Answers held for clients that have not read them: a call waits for room before it is handled. */
  answers?: AnswerBudget;
}

/**
 * What every A2A call passes, whichever binding carries it: the rate limit, the wait for room in the answer
 * budget, its context (caller, extensions, answer holder, audit note), and, once answered, its one audit line
 * and its metrics. The bindings differ only in how they say no (HTTP 429 with a JSON-RPC or google.rpc.Status
 * body, or a gRPC status), so each asks the gate and words the answer itself.
 */
export class CallGate {
  readonly limiter?: PeerRateLimiter;
  private readonly timed: boolean;

  constructor(private readonly o: CallGateOptions) {
    this.limiter = o.limiter;
    this.timed = o.metrics !== undefined || o.audit !== undefined;
  }

  /** Seconds the caller must wait (counted and audited as rate-limited), or 0 when the call may go on. */
  rateLimit(caller: CallerIdentity, binding: A2ABinding): number {
    if (!this.o.limiter) return 0;
    const wait = this.o.limiter.take(caller.name);
    if (wait > 0) {
      this.o.metrics?.rateLimited(caller.name, wait);
      this.o.audit?.({
        peer: caller.name,
        fingerprint: caller.fingerprint,
        binding,
        outcome: "rate_limited",
        code: 429,
        ms: 0,
      });
    }
    return wait;
  }

  /**
   * The call's turn to build its answer (undefined where no budget counts answers); a refusal (no room came in
   * time) is counted and audited here, and answered by the binding.
   */
  async admit(caller: CallerIdentity, binding: A2ABinding): Promise<Admission | undefined> {
    const admission = this.o.answers && (await this.o.answers.admit(caller.name));
    if (admission?.refused) {
      const code = admission.refused.code;
      this.o.metrics?.rpc(undefined, 0, code);
      this.o.audit?.({ peer: caller.name, fingerprint: caller.fingerprint, binding, outcome: "error", code, ms: 0 });
    }
    return admission;
  }

  /** The call's context: its caller, the extensions it requests, its answer holder, and (when audited) a note. */
  context(caller: CallerIdentity, requestedExtensions: string[], wholeArtifacts = false): CallContext {
    const ctx: CallContext = { caller };
    if (this.o.answers) ctx.answers = this.o.answers.holderFor(caller.name);
    if (this.o.audit) ctx.note = {};
    if (requestedExtensions.length) ctx.extensions = { requested: requestedExtensions };
    if (wholeArtifacts) ctx.wholeArtifacts = true;
    return ctx;
  }

  /** A start time for `answered` (0 when nothing reads it). */
  started(): number {
    return this.timed ? performance.now() : 0;
  }

  /** The call was answered: its metrics, and its audit line (what it concerned, ctx.note, and how it ended). */
  answered(ctx: CallContext, binding: A2ABinding, method: string | undefined, started: number, code?: number): void {
    this.o.metrics?.rpc(method, (performance.now() - started) / 1000, code);
    this.record(ctx, binding, method, started, code);
  }

  /** The audit line alone (calls the metrics do not count, e.g. the fleet PKI's and refusals before a method). */
  record(ctx: CallContext, binding: string, method: string | undefined, started: number, code?: number): void {
    this.o.audit?.({
      peer: ctx.caller.name,
      fingerprint: ctx.caller.fingerprint,
      binding,
      method,
      taskId: ctx.note?.taskId,
      outcome: code === undefined ? "ok" : ctx.note?.denied && code === PERMISSION_DENIED_CODE ? "denied" : "error",
      code,
      ms: performance.now() - started,
    });
  }

  streamOpened(): void {
    this.o.metrics?.streamOpened();
  }

  /** Called once, when a stream ends or its client goes away (undefined when no metrics count streams). */
  get streamClosed(): (() => void) | undefined {
    const m = this.o.metrics;
    return m && (() => m.streamClosed());
  }
}
