import { readFileSync, statSync } from "node:fs";
import { OtlpHttpExporter, tracesUrl, type ExporterStats } from "./otlp-exporter";
import type { OtlpResource } from "./otlp-json";
import { ParentBasedRatioSampler } from "./sampler";
import { NoopTracer, RecordingTracer, type Tracer } from "./tracer";

/**
 * The tracing settings, as the config file will name them once they are wired into src/settings (not yet:
 * this is the shape that wiring fills). Tracing is off unless otlp_endpoint is set.
 */
export interface TracingOptions {
  /** The OTLP/HTTP collector: http(s)://host:4318 (gets /v1/traces) or the full traces URL. */
  otlp_endpoint?: string;
  /** A file of 'Name: value' lines sent with every export (a collector's API key); mode 0600. */
  otlp_headers_file?: string;
  /** The share of new traces recorded, 0 to 1 (default 1). A caller's sampled flag always wins. */
  trace_sampling_ratio?: number;
}

export class TracingOptionsError extends Error {
  override name = "TracingOptionsError";
}

/** Checks the options without reading files or opening sockets: for config validation and `doctor`. */
export function validateTracingOptions(o: TracingOptions): void {
  if (o.otlp_endpoint !== undefined) {
    try {
      tracesUrl(o.otlp_endpoint);
    } catch (err) {
      throw new TracingOptionsError(
        `otlp_endpoint: ${(err as Error).message.replace(/^otlp_endpoint must be /, "must be ")}`,
      );
    }
  }
  const r = o.trace_sampling_ratio;
  if (r !== undefined && !(typeof r === "number" && r >= 0 && r <= 1))
    throw new TracingOptionsError(`trace_sampling_ratio must be a number from 0 to 1 (got ${r})`);
  if (o.otlp_headers_file !== undefined && o.otlp_endpoint === undefined)
    throw new TracingOptionsError(
      "otlp_headers_file is set but otlp_endpoint is not: there is nothing to send them to",
    );
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the exporter sets itself, or that would change how the request is framed. */
const RESERVED = new Set(["content-type", "content-length", "host", "transfer-encoding", "connection"]);

/**
 * Reads the headers file: one 'Name: value' per line, blank lines and '#' comments skipped. Errors name the
 * line number, never its contents (the value is a secret). `readableByOthers` lets the caller warn, as
 * `peers add --header-file` does.
 */
export function readOtlpHeaders(file: string): { headers: Record<string, string>; readableByOthers: boolean } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new TracingOptionsError(
      `otlp_headers_file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  const headers: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    const colon = trimmed.indexOf(":");
    const name = colon > 0 ? trimmed.slice(0, colon).trim() : "";
    const value = colon > 0 ? trimmed.slice(colon + 1).trim() : "";
    if (!HEADER_NAME.test(name) || value === "" || /[\x00-\x08\x0a-\x1f\x7f]/.test(value))
      throw new TracingOptionsError(`otlp_headers_file ${file} line ${i + 1} is not a 'Name: value' header line`);
    if (RESERVED.has(name.toLowerCase()))
      throw new TracingOptionsError(
        `otlp_headers_file ${file} line ${i + 1} sets ${name}, which the exporter sets itself`,
      );
    headers[name.toLowerCase()] = value;
  });
  return { headers, readableByOthers: (statSync(file).mode & 0o077) !== 0 };
}

export interface Tracing {
  tracer: Tracer;
  /** The exporter's counts, for metrics and `doctor`; undefined when tracing is off. */
  stats(): ExporterStats | undefined;
  /** Sends what is queued (bounded by the exporter's timeouts) and stops taking spans. */
  shutdown(): Promise<void>;
}

/** Off: the no-op tracer and nothing else (no timer, no exporter object). On: a sampler and a batching exporter. */
export function createTracing(o: TracingOptions, resource: OtlpResource, onError?: (message: string) => void): Tracing {
  validateTracingOptions(o);
  if (o.otlp_endpoint === undefined)
    return { tracer: new NoopTracer(), stats: () => undefined, shutdown: async () => {} };
  const headers = o.otlp_headers_file ? readOtlpHeaders(o.otlp_headers_file).headers : undefined;
  const exporter = new OtlpHttpExporter({
    endpoint: o.otlp_endpoint,
    headers,
    resource,
    scopeVersion: resource["service.version"],
    onError,
  });
  const tracer = new RecordingTracer(new ParentBasedRatioSampler(o.trace_sampling_ratio ?? 1), exporter);
  return { tracer, stats: () => exporter.stats(), shutdown: () => exporter.shutdown() };
}
