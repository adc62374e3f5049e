import type { Logger } from "../log";

/**
 * Refused connections (failed TLS handshakes, refused certificates, connections over the limits) are logged
 * at a rate, not one line each: a scanner or a flood would otherwise write the journal full. The first few of
 * each minute are logged one by one, with the remote address and the reason; the rest are counted by reason
 * and summed up in one line when the minute is over.
 */
export class RefusalLog {
  private inWindow = 0;
  private readonly suppressed = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly options: { windowMs?: number; detailedPerWindow?: number; count?(kind: string): void } = {},
  ) {}

  /**
   * Every refusal comes here, logged or not; `count` (the metrics) hears of each one. `kind` defaults to what
   * classify() makes of the reason; `msg` and `fields` shape its line when it is logged one by one.
   */
  refused(
    reason: string,
    remote: string | undefined,
    o: { kind?: string; msg?: string; fields?: Record<string, unknown> } = {},
  ): void {
    const kind = o.kind ?? classify(reason);
    this.options.count?.(kind);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.options.windowMs ?? 60_000);
      this.timer.unref?.();
    }
    if (++this.inWindow <= (this.options.detailedPerWindow ?? 5)) {
      this.log.warn(o.msg ?? "refused a connection", { remote, kind, reason, ...o.fields });
      return;
    }
    this.suppressed.set(kind, (this.suppressed.get(kind) ?? 0) + 1);
  }

  /** Writes the summary of the window now (also on stop). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inWindow = 0;
    if (this.suppressed.size === 0) return;
    const total = [...this.suppressed.values()].reduce((a, b) => a + b, 0);
    this.log.warn("refused more connections than were logged one by one", {
      count: total,
      ...Object.fromEntries(this.suppressed),
    });
    this.suppressed.clear();
  }
}

/** Every kind a refusal is counted under: the refused-connections counter shows each from the start, at 0. */
export const REFUSAL_KINDS = [
  "per_address_limit",
  "connection_limit",
  "evicted",
  "handshake_timeout",
  "certificate_refused",
  "expired",
  "no_certificate",
  "foreign_ca",
  "not_tls",
  // Refused requests of callers the node could not name: the token listener's, the enrollment port's.
  "no_token",
  "bad_token",
  "unknown_token",
  "enrollment_refused",
  "enrollment_throttled",
  "other",
] as const;

/** A short, stable name for why a connection was refused (for counting; the full reason is logged first). */
export function classify(reason: string): string {
  // OpenSSL and BoringSSL name their errors in upper case with underscores (HTTP_REQUEST, WRONG_VERSION_NUMBER).
  const r = reason.toLowerCase().replaceAll("_", " ");
  if (r.startsWith("evicted")) return "evicted";
  if (r.includes("too many connections from one address")) return "per_address_limit";
  if (r.includes("too many connections")) return "connection_limit";
  if (r.includes("timed out") || r.includes("timeout")) return "handshake_timeout";
  if (r.includes("revoked")) return "revoked";
  if (r.includes("unsupported certificate purpose") || r.includes("extended key usage")) return "wrong_purpose";
  if (r.includes("certificate refused")) return "certificate_refused";
  if (r.includes("expired")) return "expired";
  if (r.includes("not yet valid")) return "not_yet_valid";
  if (
    r.includes("peer did not return a certificate") ||
    r.includes("no certificate") ||
    r.includes("certificate required")
  )
    return "no_certificate";
  if (
    r.includes("unknown ca") ||
    r.includes("unable to get") ||
    r.includes("unable to verify") ||
    r.includes("self signed") ||
    r.includes("self-signed")
  )
    return "foreign_ca";
  if (r.includes("wrong version") || r.includes("http request") || r.includes("unknown protocol")) return "not_tls";
  return "other";
}
