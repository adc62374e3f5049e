/**
 * Who is calling, as proven by the TLS handshake: the verified client certificate's CN and its SHA-256
 * fingerprint. It is attached by the transport from the socket, never read from anything the client sends.
 */
export interface CallerIdentity {
  name: string;
  fingerprint: string;
}

export interface CallContext {
  caller: CallerIdentity;
}
