import { encodeExportRequest, type OtlpResource } from "./otlp-json";
import type { FinishedSpan, SpanSink } from "./span";

export interface OtlpExporterOptions {
  /** The collector: a base URL (http://host:4318, gets /v1/traces) or the full traces URL (any other path). */
  endpoint: string;
  /** Sent with every export (an API key, usually); read from otlp_headers_file, never logged. */
  headers?: Record<string, string>;
  resource: OtlpResource;
  scopeVersion?: string;
  /** Spans held while the collector is slow or away; past this, new spans are dropped and counted. */
  maxQueue?: number;
  /** Spans per request. */
  maxBatch?: number;
  /** How long a span may wait for companions before a partial batch is sent. */
  scheduleDelayMs?: number;
  /** One request, answer included. */
  exportTimeoutMs?: number;
  /** Tries per batch, the first included, for the answers the spec calls retryable. */
  maxAttempts?: number;
  /** The longest wait between tries, Retry-After included (a collector asking for an hour gets this). */
  maxBackoffMs?: number;
  /** Told when a batch is given up, with a reason in our words (for a rate-limited log line). */
  onError?: (message: string) => void;
  fetch?: typeof fetch;
  /** How to wait between tries (a test passes one that records the delay and resolves at once). */
  wait?: (ms: number) => Promise<void>;
}

export interface ExporterStats {
  /** Accepted by the collector. */
  exported: number;
  /** Never sent: the queue was full. */
  dropped: number;
  /** Sent and given up: a refusal that is not retryable, or the tries ran out. */
  failed: number;
  /** The collector's partial success: accepted the request, refused these spans. */
  rejected: number;
  /** Waiting now. */
  queued: number;
}

/** The OTLP/HTTP spec's retryable answers; 429 and 503 may carry Retry-After. Every other 4xx/5xx is final. */
const RETRYABLE = new Set([429, 502, 503, 504]);
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Batches ended spans and posts them to an OTLP/HTTP collector as JSON. The instrumented code only ever calls
 * onEnd, which appends to a bounded array and returns: no await, no I/O, nothing that can block a request on a
 * slow collector. One export runs at a time; its timer is unref'd so it never keeps the process alive.
 */
export class OtlpHttpExporter implements SpanSink {
  readonly url: string;
  private readonly queue: FinishedSpan[] = [];
  private readonly o: Required<Omit<OtlpExporterOptions, "headers" | "onError" | "scopeVersion">> & OtlpExporterOptions;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerMs = 0;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly counts = { exported: 0, dropped: 0, failed: 0, rejected: 0 };

  constructor(options: OtlpExporterOptions) {
    this.o = {
      maxQueue: 2048,
      maxBatch: 512,
      scheduleDelayMs: 2000,
      exportTimeoutMs: 10_000,
      maxAttempts: 5,
      maxBackoffMs: 30_000,
      fetch: globalThis.fetch,
      wait: (ms) => new Promise((r) => setTimeout(r, ms).unref?.()),
      ...options,
    };
    this.url = tracesUrl(options.endpoint);
  }

  onEnd(span: FinishedSpan): void {
    if (this.closed || this.queue.length >= this.o.maxQueue) {
      this.counts.dropped++;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.o.maxBatch) this.schedule(0);
    else this.schedule(this.o.scheduleDelayMs);
  }

  stats(): ExporterStats {
    return { ...this.counts, queued: this.queue.length };
  }

  /** Sends everything queued now; resolves when the sends are done (each bounded by its timeout and tries). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.running || this.queue.length) await (this.running ?? this.drain());
  }

  /** Flushes, then takes no more spans (they count as dropped). */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private schedule(ms: number): void {
    if (this.running) return; // the running drain picks up what arrived
    // A timer due as soon or sooner stands: re-arming one per span would cost more than the span.
    if (this.timer && this.timerMs <= ms) return;
    clearTimeout(this.timer);
    this.timerMs = ms;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.drain();
    }, ms);
    this.timer.unref?.();
  }

  private drain(): Promise<void> {
    this.running ??= (async () => {
      while (this.queue.length) await this.send(this.queue.splice(0, this.o.maxBatch));
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async send(batch: FinishedSpan[]): Promise<void> {
    const body = encodeExportRequest(batch, this.o.resource, this.o.scopeVersion);
    const headers = { ...this.o.headers, "content-type": "application/json", accept: "application/json" };
    for (let attempt = 1; ; attempt++) {
      let delay: number;
      let why: string;
      try {
        const res = await this.o.fetch(this.url, {
          method: "POST",
          headers,
          body,
          signal: AbortSignal.timeout(this.o.exportTimeoutMs),
        });
        const answer = await boundedText(res);
        if (res.ok) return this.accepted(batch.length, answer);
        why = `the collector at ${this.url} answered HTTP ${res.status}`;
        if (!RETRYABLE.has(res.status)) return this.giveUp(batch.length, `${why}${statusMessage(answer)}`);
        delay = retryAfterMs(res.headers.get("retry-after")) ?? backoffMs(attempt);
      } catch (err) {
        const e = err as Error;
        why =
          e?.name === "TimeoutError"
            ? `no answer from ${this.url} within ${this.o.exportTimeoutMs} ms`
            : `cannot reach ${this.url}: ${e?.message ?? String(err)}`;
        delay = backoffMs(attempt);
      }
      if (attempt >= this.o.maxAttempts) return this.giveUp(batch.length, `${why} (${attempt} tries)`);
      await this.o.wait(Math.min(delay, this.o.maxBackoffMs));
    }
  }

  private accepted(count: number, answer: string): void {
    // An empty body, or {} , is full success; partialSuccess names the spans refused (the rest were taken).
    let rejected = 0;
    let message = "";
    try {
      const partial = answer
        ? (JSON.parse(answer) as { partialSuccess?: { rejectedSpans?: string | number; errorMessage?: string } })
            .partialSuccess
        : undefined;
      rejected = Math.min(count, Math.max(0, Number(partial?.rejectedSpans ?? 0) || 0));
      message = typeof partial?.errorMessage === "string" ? partial.errorMessage : "";
    } catch {
      // a 2xx with a body that is not JSON: the spans were taken, the body says nothing we can use
    }
    this.counts.exported += count - rejected;
    this.counts.rejected += rejected;
    if (rejected)
      this.o.onError?.(
        `the collector refused ${rejected} of ${count} spans${message ? `: ${message.slice(0, 200)}` : ""}`,
      );
  }

  private giveUp(count: number, reason: string): void {
    this.counts.failed += count;
    this.o.onError?.(`${count} spans not exported: ${reason}`);
  }
}

/** The OTLP exporter spec's rule for a base endpoint: the signal's path is appended; a full path is kept. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new Error(`otlp_endpoint must be an http:// or https:// URL (got ${u.protocol})`);
  if (u.pathname === "" || u.pathname === "/") u.pathname = "/v1/traces";
  return u.toString();
}

/** Retry-After as seconds or an HTTP date (RFC 9110 10.2.3), in ms from now; undefined if absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Exponential backoff with jitter, as the spec asks when the server gives no Retry-After: ~1 s, 2 s, 4 s... */
export function backoffMs(attempt: number): number {
  const base = 1000 * 2 ** (attempt - 1);
  return base / 2 + Math.random() * (base / 2);
}

async function boundedText(res: Response): Promise<string> {
  const length = Number(res.headers.get("content-length") ?? 0);
  if (length > MAX_ANSWER_BYTES) {
    await res.body?.cancel();
    return "";
  }
  const text = await res.text();
  return text.length > MAX_ANSWER_BYTES ? "" : text;
}

/** A refusal's google.rpc.Status message (JSON), shortened; nothing when there is none. */
function statusMessage(answer: string): string {
  try {
    const m = (JSON.parse(answer) as { message?: unknown }).message;
    return typeof m === "string" && m ? `: ${m.slice(0, 200)}` : "";
  } catch {
    return "";
  }
}
