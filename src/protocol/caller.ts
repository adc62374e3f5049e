/**
 * Who is calling, as proven by the TLS handshake: the verified client certificate's CN and its SHA-256
 * fingerprint. It is attached by the transport from the socket, never read from anything the client sends.
 */
export interface CallerIdentity {
  name: string;
  fingerprint: string;
  /**
   * True for the plain loopback listener, where no certificate says who is calling: every local tool shares
   * that one identity, so a messageId two of them happen to reuse is not a retry and is not deduplicated.
   */
  anonymous?: boolean;
}

export interface CallContext {
  caller: CallerIdentity;
  /** What the call turned out to concern, noted as it goes, for the audit log (absent when nobody reads it). */
  note?: CallNote;
}

/** Filled in by the request handler: the task a call concerns once it is known, and whether policy refused it. */
export interface CallNote {
  taskId?: string;
  denied?: boolean;
}
