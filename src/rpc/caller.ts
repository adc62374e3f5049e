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
  /**
   * True for a caller outside the fleet (a bearer token on the token listener): it owns its tasks like any
   * caller, but is not shown what is only for fleet members (the extended agent card).
   */
  outsideFleet?: boolean;
}

/**
 * The A2A extensions of one request: the URIs the client named in its A2A-Extensions header, and the ones
 * the handler activated for it (which the transport echoes in the answer's A2A-Extensions header).
 */
export interface RequestExtensions {
  requested: string[];
  activated?: string[];
}

export interface CallContext {
  caller: CallerIdentity;
  /** What the call turned out to concern, noted as it goes, for the audit log (absent when nobody reads it). */
  note?: CallNote;
  /** Absent when the request named none (and for calls that do not come over HTTP). */
  extensions?: RequestExtensions;
  /**
   * The client reads each streamed artifact update as a whole piece of its answer (Hermes's own A2A client,
   * told by its User-Agent): its streams carry every artifact whole, once (see whole-artifacts.ts).
   */
  wholeArtifacts?: boolean;
  /**
   * Where the bytes of this call's answers are counted while they wait to be read (see answer-holds.ts and
   * server/answer-budget.ts); absent where nothing counts them.
   */
  answers?: AnswerHolder;
}

/** The answer budget of one caller, as the protocol layer uses it. */
export interface AnswerHolder {
  /**
   * Counts `bytes` of an answer built for this caller until they are written; undefined (nothing counted)
   * when the caller, or the node, already holds as much as it may: the answer is then refused instead.
   */
  hold(bytes: number): AnswerHold | undefined;
  /** The refusal for an answer hold() turned down, naming the limit. */
  refusal(): Error;
}

/** Bytes of one answer counted against a budget; the writer gives them back as the client takes them. */
export interface AnswerHold {
  /** Gives back `bytes` (all that is left when omitted); more than is held gives back what is held. */
  release(bytes?: number): void;
}

/** Filled in by the request handler: the task a call concerns once it is known, and whether policy refused it. */
export interface CallNote {
  taskId?: string;
  denied?: boolean;
}

/** The URIs of an A2A-Extensions header: comma-separated (several header lines arrive joined), each once. */
export function parseExtensionsHeader(value: string | undefined | null): string[] {
  if (!value) return [];
  return [
    ...new Set(
      value
        .split(",")
        .map((u) => u.trim())
        .filter((u) => u !== ""),
    ),
  ];
}
