import { createHmac, timingSafeEqual } from "node:crypto";
import type { AuthenticationInfo } from "../protocol/types";

/**
 * What a push notification carries besides its body, and how a receiver checks it.
 *
 * Compatibility with @a2a-js/sdk 1.3.0 (DefaultPushNotificationSender): it POSTs the StreamResponse JSON with
 * `Content-Type: application/a2a+json` and either `Authorization: <scheme> <credentials>` (when the config has
 * both) or the config's token in `X-A2A-Notification-Token`. A receiver written for the SDK checks one of those,
 * so both are sent here as the SDK would; we send the token header even when Authorization is present, which
 * an SDK receiver ignores.
 *
 * On top of that, for receivers that want more than a bearer-like token: the token is also the key of an
 * HMAC-SHA256 over `${timestamp}.${body}`, sent as `X-A2A-Signature: sha256=<hex>` with the timestamp (Unix
 * seconds) in `X-A2A-Timestamp`. The MAC proves the body was not altered, and including the timestamp lets the
 * receiver refuse a captured notification replayed later (verifySignature's tolerance). Every retry is signed
 * afresh with its own timestamp. `X-A2A-Delivery-Id` is the same on every retry of one delivery, so a receiver
 * can drop the duplicates that at-least-once delivery allows.
 */
export const A2A_CONTENT_TYPE = "application/a2a+json";
export const TOKEN_HEADER = "X-A2A-Notification-Token";
export const SIGNATURE_HEADER = "X-A2A-Signature";
export const TIMESTAMP_HEADER = "X-A2A-Timestamp";
export const DELIVERY_ID_HEADER = "X-A2A-Delivery-Id";

/** Default window a receiver accepts a timestamp in, either side of its clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Hex HMAC-SHA256 of `body` keyed by `token`. */
export function signBody(token: string, body: string): string {
  return createHmac("sha256", token).update(body).digest("hex");
}

/** The string the signature covers: the timestamp first, so it cannot be swapped independently of the body. */
export function signedPayload(timestamp: string, body: string): string {
  return `${timestamp}.${body}`;
}

export interface PushHeaderInput {
  token?: string;
  authentication?: AuthenticationInfo;
  /** Unix seconds. */
  timestamp: number;
  deliveryId?: string;
}

/** The headers of one delivery attempt of `body`. */
export function pushHeaders(body: string, input: PushHeaderInput): Record<string, string> {
  const headers: Record<string, string> = { "Content-Type": A2A_CONTENT_TYPE };
  if (input.deliveryId) headers[DELIVERY_ID_HEADER] = input.deliveryId;
  if (input.token) {
    const ts = String(input.timestamp);
    headers[TOKEN_HEADER] = input.token;
    headers[TIMESTAMP_HEADER] = ts;
    headers[SIGNATURE_HEADER] = `sha256=${signBody(input.token, signedPayload(ts, body))}`;
  }
  // Same condition as the SDK: a scheme without credentials would make a meaningless header.
  const auth = input.authentication;
  if (auth?.scheme && auth.credentials) headers.Authorization = `${auth.scheme} ${auth.credentials}`;
  return headers;
}

export interface VerifyOptions {
  /** Accept timestamps this far from `nowSeconds` (default 300); Infinity turns the replay check off. */
  toleranceSeconds?: number;
  nowSeconds?: number;
}

/**
 * For receivers (and tests): true when `header` (the X-A2A-Signature value) is the MAC of `timestamp` and the
 * exact body bytes received, keyed by the token registered with the config, and the timestamp is recent.
 * Compares in constant time.
 */
export function verifySignature(
  token: string,
  timestamp: string | null | undefined,
  body: string,
  header: string | null | undefined,
  options: VerifyOptions = {},
): boolean {
  if (!timestamp || !header || !/^\d+$/.test(timestamp) || !header.startsWith("sha256=")) return false;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSeconds = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) return false;
  const expected = Buffer.from(signBody(token, signedPayload(timestamp, body)), "hex");
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
