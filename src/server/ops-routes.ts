import type { CallerIdentity } from "../rpc/caller";
import type { HttpResponse } from "./http1";
import type { ReadinessReport } from "./readiness";

export interface OpsOptions {
  name: string;
  version: string;
  executor: string;
  startedAt: number;
  readiness(): Promise<ReadinessReport>;
  /**
   * The metrics in the Prometheus text format, with the format's content type: the metrics are read from every
   * floor (server/ among them), so they come in from above and server/ does not import metrics/.
   */
  metrics(): Promise<{ contentType: string; body: string }>;
}

/** The paths ops() answers; the admin port serves these and nothing else. */
export const OPS_PATHS = ["/health", "/health/live", "/health/ready", "/metrics"] as const;

const JSON_HEADERS = { "content-type": "application/json", "cache-control": "no-store" };

/**
 * Health and metrics, for operators and their tools: answered straight from the connection (no web framework),
 * on every listener, so a scrape costs the node little. Returns undefined for any other request.
 * - /health/live: the process runs and its event loop turns (200 while it can answer at all).
 * - /health/ready: database writable, certificate valid (and not revoked), model endpoint answering, file
 *   descriptors left, revocation list not stale; 503 naming what failed.
 * - /health: liveness with who the node is and who it thinks the caller is.
 * - /metrics: Prometheus text format 0.0.4.
 */
export function opsRoutes(o: OpsOptions) {
  return function ops(method: string, path: string, caller?: CallerIdentity): Promise<HttpResponse> | undefined {
    if (method !== "GET" && method !== "HEAD") return undefined;
    switch (path) {
      case "/health/live":
        return Promise.resolve(json(200, { status: "ok", uptimeSeconds: uptime(o) }));
      case "/health":
        return Promise.resolve(
          json(200, {
            status: "ok",
            name: o.name,
            version: o.version,
            executor: o.executor,
            uptimeSeconds: uptime(o),
            caller: caller?.name,
          }),
        );
      case "/health/ready":
        return o.readiness().then((r) =>
          json(r.ready ? 200 : 503, {
            ready: r.ready,
            status: r.ready ? "ready" : `not ready: ${r.failed.join(", ")}`,
            failed: r.failed,
            checks: r.checks,
            // What the one-line check used to say: the failed checks' details, or the model endpoint's.
            detail: r.ready ? r.checks.model.detail : r.failed.map((f) => `${f}: ${r.checks[f]?.detail}`).join("; "),
            executor: o.executor,
          }),
        );
      case "/metrics":
        return o.metrics().then((m) => ({
          status: 200,
          headers: { "content-type": m.contentType, "cache-control": "no-store" },
          body: m.body,
        }));
      default:
        return undefined;
    }
  };
}

function uptime(o: OpsOptions): number {
  return Math.round((Date.now() - o.startedAt) / 1000);
}

function json(status: number, body: unknown): HttpResponse {
  return { status, headers: JSON_HEADERS, body: JSON.stringify(body) };
}
