/**
 * gRPC's message framing over an HTTP/2 stream (PROTOCOL-HTTP2.md, "Length-Prefixed-Message"): one byte
 * compressed-flag, a 4-byte big-endian length, then the message. A reader takes DATA chunks as they come and
 * hands out whole messages; a length over the limit is refused before any of its bytes are buffered.
 */

export const FRAME_HEADER_BYTES = 5;
/** gRPC's customary default for a received message (grpc-js, grpc-go: 4 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export function frame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, FRAME_HEADER_BYTES);
  return out;
}

/** Why a stream's bytes cannot be read as messages; `code` is the gRPC status to answer with. */
export class FramingError extends Error {
  override name = "FramingError";
  constructor(
    message: string,
    readonly code: "RESOURCE_EXHAUSTED" | "UNIMPLEMENTED" | "INTERNAL",
  ) {
    super(message);
  }
}

export class MessageReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;

  constructor(private readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES) {}

  /** Adds a DATA chunk; returns the messages it completed. Throws FramingError on a frame it will not read. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (chunk.length) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    const out: Uint8Array[] = [];
    for (;;) {
      if (this.buffered < FRAME_HEADER_BYTES) return out;
      const head = this.peek(FRAME_HEADER_BYTES);
      const flag = head[0];
      const length = new DataView(head.buffer, head.byteOffset, FRAME_HEADER_BYTES).getUint32(1);
      // We never advertise grpc-accept-encoding, so a compressed message is one we did not agree to.
      if (flag === 1) {
        throw new FramingError("compressed messages are not accepted (no grpc-encoding is supported)", "UNIMPLEMENTED");
      }
      if (flag !== 0) throw new FramingError(`bad compressed-flag byte ${flag}`, "INTERNAL");
      if (length > this.maxMessageBytes) {
        const why = `message of ${length} bytes is over the limit of ${this.maxMessageBytes}`;
        throw new FramingError(why, "RESOURCE_EXHAUSTED");
      }
      if (this.buffered < FRAME_HEADER_BYTES + length) return out;
      out.push(this.take(FRAME_HEADER_BYTES + length).subarray(FRAME_HEADER_BYTES));
    }
  }

  /** Bytes of a message begun and not finished: at end of stream, anything here is a truncated message. */
  pending(): number {
    return this.buffered;
  }

  private peek(n: number): Uint8Array {
    const first = this.chunks[0];
    if (first.length >= n) return first.subarray(0, n);
    return this.concat(n, false);
  }

  private take(n: number): Uint8Array {
    const first = this.chunks[0];
    if (first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    return this.concat(n, true);
  }

  private concat(n: number, consume: boolean): Uint8Array {
    const out = new Uint8Array(n);
    let filled = 0;
    let i = 0;
    while (filled < n) {
      const c = this.chunks[i];
      const part = c.subarray(0, Math.min(c.length, n - filled));
      out.set(part, filled);
      filled += part.length;
      if (consume && part.length === c.length) {
        this.chunks.shift();
      } else if (consume) {
        this.chunks[i] = c.subarray(part.length);
      } else i++;
    }
    if (consume) this.buffered -= n;
    return out;
  }
}
