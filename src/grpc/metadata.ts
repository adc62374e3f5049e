/**
 * What a gRPC call's request headers say beyond the method: the A2A service parameters (spec §10.2: gRPC
 * metadata, keys lowercase, several values of A2A-Extensions comma-separated), the deadline (grpc-timeout),
 * and whether the body is protobuf at all (content-type application/grpc or application/grpc+proto).
 */

export type HeaderValue = string | string[] | undefined;
export type Headers = Record<string, HeaderValue>;

export const A2A_VERSION_KEY = "a2a-version";
export const A2A_EXTENSIONS_KEY = "a2a-extensions";

export interface ServiceParameters {
  /** The a2a-version value, trimmed; null when the call sent none. */
  version: string | null;
  /** The extension URIs of every a2a-extensions entry, split on commas, in order, without repeats. */
  extensions: string[];
}

const values = (v: HeaderValue): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export function serviceParameters(headers: Headers): ServiceParameters {
  const version = values(headers[A2A_VERSION_KEY])[0]?.trim();
  const extensions: string[] = [];
  for (const entry of values(headers[A2A_EXTENSIONS_KEY])) {
    for (const uri of entry.split(",")) {
      const u = uri.trim();
      if (u && !extensions.includes(u)) extensions.push(u);
    }
  }
  return { version: version ? version : null, extensions };
}

/** Outgoing metadata for a call: the same parameters, as a client sends them. */
export function serviceMetadata(params: { version?: string; extensions?: string[] }): Record<string, string> {
  const out: Record<string, string> = {};
  if (params.version) out[A2A_VERSION_KEY] = params.version;
  if (params.extensions?.length) out[A2A_EXTENSIONS_KEY] = params.extensions.join(",");
  return out;
}

/**
 * The grpc-timeout header in milliseconds ("TimeoutValue TimeoutUnit": up to 8 digits, then H M S m u n);
 * undefined when absent, and also when malformed (gRPC says to treat a bad value as no deadline).
 */
export function deadlineMs(headers: Headers): number | undefined {
  const v = values(headers["grpc-timeout"])[0];
  const m = v ? /^(\d{1,8})([HMSmun])$/.exec(v) : null;
  if (!m) return undefined;
  const n = Number(m[1]);
  const perUnit: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };
  return Math.ceil(n * perUnit[m[2]]);
}

/** grpc-timeout for a deadline this many milliseconds away, as a client writes it. */
export function timeoutHeader(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  return whole <= 99_999_999 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}

/**
 * A gRPC request's content-type is application/grpc, optionally "+proto" or "+json" or with parameters; we
 * read protobuf only. Anything else is not a gRPC call (the binding answers HTTP 415, as gRPC specifies).
 */
export function isProtobufGrpc(contentType: HeaderValue): boolean {
  const ct = values(contentType)[0]?.toLowerCase().split(";")[0].trim();
  return ct === "application/grpc" || ct === "application/grpc+proto";
}
