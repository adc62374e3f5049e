// The one place that loads @peculiar/x509. Its dependency-injection container needs the Reflect metadata
// polyfill installed first ("tsyringe requires a reflect polyfill"); every other module imports x509 from
// here, so that order cannot be broken by someone reordering imports elsewhere.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

// Use the runtime's WebCrypto explicitly instead of the library's global-sniffing default, so Bun, Node
// and a compiled binary all sign with the same provider.
x509.cryptoProvider.set(globalThis.crypto);

export { x509 };

/** ECDSA P-256 with SHA-256: the one algorithm this PKI issues, accepted by OpenSSL, Node and Bun alike. */
export const EC_ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
