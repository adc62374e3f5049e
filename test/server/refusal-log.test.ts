import { describe, expect, it } from "vitest";
import { classify, REFUSAL_KINDS } from "../../src/server/refusal-log";

describe("classify: why a connection was refused, as a metric label", () => {
  it.each([
    ["too many connections from one address", "per_address_limit"],
    ["too many connections", "connection_limit"],
    ["TLS handshake timeout", "handshake_timeout"],
    ["client certificate refused: it was not issued by the fleet CA itself", "certificate_refused"],
    ["certificate has expired", "expired"],
    ["peer did not return a certificate", "no_certificate"],
    // What Bun (BoringSSL) reports for a client of another fleet, and for plain HTTP on the TLS port.
    ["unable to verify the first certificate", "foreign_ca"],
    ["unable to get local issuer certificate", "foreign_ca"],
    ["self signed certificate in certificate chain", "foreign_ca"],
    ["error:1000009c:SSL routines:OPENSSL_internal:HTTP_REQUEST", "not_tls"],
    ["error:1000006b:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER", "not_tls"],
    ["something new", "other"],
  ])("%s → %s", (reason, kind) => {
    expect(classify(reason)).toBe(kind);
    expect(REFUSAL_KINDS).toContain(kind);
  });
});
