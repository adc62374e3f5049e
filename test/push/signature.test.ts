import { describe, expect, it } from "vitest";
import { pushHeaders, signBody, verifySignature } from "../../src/push/signature";

describe("push signature", () => {
  it("signBody is hex HMAC-SHA256 (the well-known 'quick brown fox' vector)", () => {
    expect(signBody("key", "The quick brown fox jumps over the lazy dog")).toBe(
      "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
    );
  });

  it("headers carry the content type, token, timestamp, a MAC over timestamp.body, and Authorization", () => {
    const body = '{"statusUpdate":{"taskId":"t"}}';
    const h = pushHeaders(body, {
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "abc" },
      timestamp: 1_700_000_000,
      deliveryId: "D1",
    });
    expect(h).toEqual({
      "Content-Type": "application/a2a+json",
      "X-A2A-Delivery-Id": "D1",
      "X-A2A-Notification-Token": "tok",
      "X-A2A-Timestamp": "1700000000",
      "X-A2A-Signature": `sha256=${signBody("tok", `1700000000.${body}`)}`,
      Authorization: "Bearer abc",
    });
  });

  it("without a token there is nothing to sign with; a scheme without credentials sends no Authorization", () => {
    const h = pushHeaders("{}", { authentication: { scheme: "Bearer" }, timestamp: 1 });
    expect(h).toEqual({ "Content-Type": "application/a2a+json" });
  });

  it("verifySignature accepts the real signature and refuses tampering, wrong keys, stale or missing parts", () => {
    const nowSeconds = 1_700_000_000;
    const body = '{"task":{"id":"t1"}}';
    const h = pushHeaders(body, { token: "tok", timestamp: nowSeconds });
    const ts = h["X-A2A-Timestamp"]!;
    const sig = h["X-A2A-Signature"]!;
    expect(verifySignature("tok", ts, body, sig, { nowSeconds })).toBe(true);
    expect(verifySignature("tok", ts, body.replace("t1", "t2"), sig, { nowSeconds })).toBe(false);
    expect(verifySignature("other", ts, body, sig, { nowSeconds })).toBe(false);
    // timestamp is in the MAC
    expect(verifySignature("tok", String(nowSeconds + 1), body, sig, { nowSeconds })).toBe(false);
    // A replay 10 minutes later is refused; with the check off it verifies.
    expect(verifySignature("tok", ts, body, sig, { nowSeconds: nowSeconds + 600 })).toBe(false);
    expect(verifySignature("tok", ts, body, sig, { nowSeconds: nowSeconds + 600, toleranceSeconds: Infinity })).toBe(
      true,
    );
    expect(verifySignature("tok", null, body, sig, { nowSeconds })).toBe(false);
    expect(verifySignature("tok", ts, body, undefined, { nowSeconds })).toBe(false);
    expect(verifySignature("tok", ts, body, sig.replace("sha256=", "sha1="), { nowSeconds })).toBe(false);
    expect(verifySignature("tok", ts, body, "sha256=abcd", { nowSeconds })).toBe(false);
    // Default clock: a fresh signature verifies now.
    const fresh = pushHeaders(body, { token: "tok", timestamp: Math.floor(Date.now() / 1000) });
    expect(verifySignature("tok", fresh["X-A2A-Timestamp"], body, fresh["X-A2A-Signature"])).toBe(true);
  });
});
