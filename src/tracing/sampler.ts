import type { SpanContext } from "./trace-context";

/**
 * Head sampling: decided once, when a trace's first span starts here, and carried on in the sampled flag.
 * With a parent (from a header or a local span) its decision is followed, whatever our ratio, so a trace is
 * never recorded on one node and missing on the next. Without one, a ratio of the traces are kept, judged
 * from the trace id's last 7 bytes (the part W3C Trace Context level 2 makes random), so every node that
 * judges the same new trace with the same ratio agrees.
 */
export interface Sampler {
  shouldSample(traceId: string, parent: SpanContext | undefined): boolean;
}

export class ParentBasedRatioSampler implements Sampler {
  private readonly threshold: bigint;

  constructor(readonly ratio: number) {
    if (!(ratio >= 0 && ratio <= 1)) throw new RangeError(`sampling ratio must be between 0 and 1 (got ${ratio})`);
    // Keep a trace when its 56 random bits fall below ratio * 2^56.
    this.threshold = BigInt(Math.round(ratio * 2 ** 56));
  }

  shouldSample(traceId: string, parent: SpanContext | undefined): boolean {
    if (parent) return parent.sampled;
    if (this.ratio >= 1) return true;
    if (this.ratio <= 0) return false;
    return BigInt(`0x${traceId.slice(18)}`) < this.threshold;
  }
}
