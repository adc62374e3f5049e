/**
 * A real webhook receiver for the push tests: Bun.serve on 127.0.0.1 (or another loopback address) with an
 * ephemeral port, plain or TLS. It records every request, can be told to fail (or hang on) the next K of them
 * or all of them, and lets a test await "n requests arrived" or "n answered 2xx" as events instead of sleeping.
 */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The status the receiver answered with (0 when it never answered). */
  status: number;
}

type Mode = { kind: "fail"; status: number; headers?: Record<string, string> } | { kind: "hang" };

export interface ReceiverOptions {
  /** Address to listen on (default 127.0.0.1). */
  hostname?: string;
  /** Serve https with this certificate. */
  tls?: { cert: string; key: string };
  /** Arrivals of several receivers in one order: `name` is pushed here as each request arrives. */
  journal?: { name: string; events: string[] };
}

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Requests being handled right now, and the most there ever were at once. */
  active = 0;
  maxActive = 0;
  private readonly plan: Mode[] = [];
  private failAll: Mode | undefined;
  private delayMs = 0;
  private readonly waiters: { ready: () => boolean; resolve: () => void }[] = [];
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor(private readonly options: ReceiverOptions = {}) {
    this.server = Bun.serve({
      hostname: options.hostname ?? "127.0.0.1",
      port: 0,
      tls: options.tls,
      fetch: (req) => this.handle(req),
    });
  }

  get port(): number {
    return this.server.port!;
  }

  /** This receiver's URL; `host` names it otherwise (a name the test's resolver maps to its address). */
  url(path = "/hook", host = this.options.hostname ?? "127.0.0.1"): string {
    return `${this.options.tls ? "https" : "http"}://${host}:${this.port}${path}`;
  }

  /** The next `k` requests are answered with `status` (Infinity: all of them until told otherwise). */
  failNext(k: number, status = 503, headers?: Record<string, string>): void {
    if (k === Infinity) this.failAll = { kind: "fail", status, headers };
    else for (let i = 0; i < k; i++) this.plan.push({ kind: "fail", status, headers });
  }

  /** Back to answering 204 to everything. */
  succeed(): void {
    this.failAll = undefined;
    this.plan.length = 0;
  }

  /** The next request is never answered (the sender must time out). */
  hangNext(): void {
    this.plan.push({ kind: "hang" });
  }

  /** No request is ever answered: a black hole. */
  hangAll(): void {
    this.failAll = { kind: "hang" };
  }

  /** Answer every request only after `ms` (to make concurrent senders overlap). */
  respondAfter(ms: number): void {
    this.delayMs = ms;
  }

  /** Resolves once at least `n` requests have arrived. */
  received(n: number): Promise<ReceivedRequest[]> {
    return this.until(() => this.requests.length >= n).then(() => this.requests.slice());
  }

  /** Resolves once at least `n` requests have been answered 2xx. */
  delivered(n: number): Promise<ReceivedRequest[]> {
    return this.until(() => this.ok().length >= n).then(() => this.ok());
  }

  ok(): ReceivedRequest[] {
    return this.requests.filter((r) => r.status >= 200 && r.status < 300);
  }

  stop(): void {
    this.server.stop(true);
  }

  private until(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ ready, resolve }));
  }

  private async handle(req: Request): Promise<Response> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    const record: ReceivedRequest = {
      method: req.method,
      path: new URL(req.url).pathname,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      status: 0,
    };
    const mode = this.plan.shift() ?? this.failAll;
    this.requests.push(record);
    this.options.journal?.events.push(this.options.journal.name);
    try {
      if (mode?.kind === "hang") {
        this.notifyWaiters();
        return await new Promise<Response>(() => {});
      }
      if (this.delayMs) await Bun.sleep(this.delayMs);
      record.status = mode?.kind === "fail" ? mode.status : 204;
      this.notifyWaiters();
      return new Response(mode?.kind === "fail" ? "nope" : null, {
        status: record.status,
        headers: mode?.kind === "fail" ? mode.headers : undefined,
      });
    } finally {
      this.active--;
    }
  }

  private notifyWaiters(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.ready()) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }
}
