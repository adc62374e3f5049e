import { sourceOf } from "./source-address";

/** What a summary line adds to the first record of its kind: how many more came, since when. */
export interface Repeats {
  /** Refusals like the first one after it, within the window ("N more like this"). */
  more: number;
  /** When the first one came (ISO time). */
  since: string;
  /** On an overflow line: how many sources those came from (at most MAX_SOURCES_COUNTED). */
  sources?: number;
}

/** Distinct sources counted on an overflow line; past it, the count says "at least". */
const MAX_SOURCES_COUNTED = 10_000;

export interface RefusalTallyOptions<R> {
  /** Writes one record: the first of its key in a window as it came, or the summary of the rest with `repeats`. */
  write(record: R, repeats?: Repeats): void;
  /** What makes two refusals "alike" (default: their kind and source, see keyOf). */
  key?(record: R): string;
  /** The kind a record is summed under once the window's keys are used up. */
  kind(record: R): string;
  /** Length of a window (default 60 s). */
  windowMs?: number;
  /** Distinct keys recorded in full per window (default 10); more are summed by kind alone. */
  keysPerWindow?: number;
  now?: () => number;
}

/**
 * Refusals (failed handshakes, bad tokens, failed enrollments, rate-limited calls) summed before they reach a
 * log that rotates, so that no flood can push older records out of it. Within a window, the first refusal of
 * each source and kind is written as it comes; the rest of that source and kind are counted and written as one
 * line when the window ends ("N more like this since T"). A flood from many sources is bounded too: past
 * `keysPerWindow` distinct keys in a window, refusals are counted by kind alone, one line each. So refusals add
 * at most about 2 × keysPerWindow + kinds lines per window, however many come, and the accepted calls and
 * first refusals written before a flood stay in the log.
 */
export class RefusalTally<R> {
  private readonly firsts = new Map<string, { record: R; since: number; more: number }>();
  private readonly overflow = new Map<string, { record: R; since: number; more: number; sources: Set<string> }>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly o: RefusalTallyOptions<R>) {}

  add(record: R): void {
    const now = this.o.now?.() ?? Date.now();
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.o.windowMs ?? 60_000);
      this.timer.unref?.();
    }
    const key = this.o.key?.(record) ?? this.o.kind(record);
    const seen = this.firsts.get(key);
    if (seen) {
      seen.more++;
      return;
    }
    if (this.firsts.size < (this.o.keysPerWindow ?? 10)) {
      this.firsts.set(key, { record, since: now, more: 0 });
      this.o.write(record);
      return;
    }
    const kind = this.o.kind(record);
    let over = this.overflow.get(kind);
    if (!over) this.overflow.set(kind, (over = { record, since: now, more: 0, sources: new Set() }));
    over.more++;
    if (over.sources.size < MAX_SOURCES_COUNTED) over.sources.add(key);
  }

  /** Writes the window's summaries now and starts a new window (also on stop). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const { record, since, more } of this.firsts.values())
      if (more > 0) this.o.write(record, { more, since: new Date(since).toISOString() });
    for (const { record, since, more, sources } of this.overflow.values())
      this.o.write(record, { more, since: new Date(since).toISOString(), sources: sources.size });
    this.firsts.clear();
    this.overflow.clear();
  }
}

/** The usual key: a refusal's kind and its source (IPv4 address, IPv6 /64), and the certificate it showed, if any. */
export function keyOf(r: { kind: string; remote?: string; fingerprint?: string }): string {
  return `${r.kind} ${sourceOf(r.remote)} ${r.fingerprint ?? ""}`;
}

/**
 * A refusal record as the audit log writes it: as it came, or the summary of those like it, with `more` and
 * `since` (and `sources`, on a line summed by kind alone, which then names no source or certificate).
 */
export function summed<R extends { kind: string; reason: string }>(
  r: R,
  repeats: Repeats | undefined,
): R | (Pick<R, "kind" | "reason"> & Repeats) {
  if (!repeats) return r;
  if (repeats.sources === undefined) return { ...r, more: repeats.more, since: repeats.since };
  return {
    kind: r.kind,
    reason: `refused from ${repeats.sources} more sources this minute, past those recorded one by one`,
    more: repeats.more,
    since: repeats.since,
    sources: repeats.sources,
  };
}
