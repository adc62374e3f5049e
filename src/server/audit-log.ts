import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** One A2A call, as the request router saw it answered (a stream: when its head was sent). */
export interface AuditCall {
  peer: string;
  fingerprint: string;
  /** "jsonrpc" or "http-json". */
  binding: string;
  /** The method as the binding names it (v0.3 calls by their v0.3 names); absent for a method it does not serve. */
  method?: string;
  taskId?: string;
  /** "ok", "error" (code says which), "denied" (by the authorization policy) or "rate_limited". */
  outcome: "ok" | "error" | "denied" | "rate_limited";
  code?: number;
  ms: number;
  /** On a summary line (rate-limited calls are summed per peer, see refusal-tally.ts): how many more, since when. */
  more?: number;
  since?: string;
}

/**
 * A refusal of someone the node could not name: a connection refused before any request (a failed handshake,
 * a refused certificate, over the limits), a request without a valid bearer token, a failed enrollment.
 */
export interface AuditRefusal {
  kind: string;
  reason: string;
  remote?: string;
  /** The certificate's CN and fingerprint, when the handshake got as far as one (then it was refused). */
  peer?: string;
  fingerprint?: string;
  /** A refused enrollment: the node name its token claimed (never the token). */
  name?: string;
  /** On a summary line (see refusal-tally.ts): how many more like this, since when, from how many sources. */
  more?: number;
  since?: string;
  sources?: number;
}

export interface AuditLogOptions {
  path: string;
  /** The file is rotated before a line would take it past this. */
  maxBytes: number;
  /** Rotated files kept: PATH.1 (the newest) to PATH.keep. */
  keep: number;
  /** Lines wait in memory at most this long before they are written (default 200 ms). */
  flushMs?: number;
  /** Buffered bytes that are written at once, without waiting for the timer (default 64 KiB). */
  flushBytes?: number;
  /**
   * Told when writing fails (the disk is full, the folder is gone): those lines are dropped. Told once per run
   * of failures, so a full disk does not fill the journal too; `onRecovered` hears when writing works again.
   */
  onError?(err: unknown): void;
  onRecovered?(dropped: number): void;
}

/**
 * The audit log: JSON lines, one per A2A call and one per refusal (the node sums floods of refusals before
 * they come here: refusal-tally.ts), never message content or a secret. A call only formats its line and appends it to
 * a buffer; the buffer is written in one system call when it holds 64 KiB or 200 ms after its first line, and on close,
 * so the hot path never waits for the disk. The file is 0600 (it names every peer and task). Before a write would take
 * it past maxBytes it is rotated, line by line, as logrotate's numbered scheme does: PATH.1 is the newest old file,
 * PATH.keep the oldest kept.
 *
 * Written with node:fs on a descriptor opened in append mode rather than Bun's FileSink: the writes are
 * already batched here, and a descriptor of our own is what sets the file's mode and rotates it exactly at a
 * line boundary.
 */
export class AuditLog {
  private fd: number;
  private size: number;
  private buffer: string[] = [];
  private buffered = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** Lines dropped since writing began to fail; undefined while it works. */
  private dropped: number | undefined;

  constructor(private readonly options: AuditLogOptions) {
    mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
    this.fd = this.open();
    this.size = fstatSync(this.fd).size;
  }

  call(c: AuditCall): void {
    this.append({ time: new Date().toISOString(), event: "call", ...c, ms: Math.round(c.ms * 1000) / 1000 });
  }

  refused(r: AuditRefusal): void {
    this.append({ time: new Date().toISOString(), event: "refused", ...r });
  }

  /** Writes what is buffered now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0 || this.closed) return;
    const lines = this.buffer;
    this.buffer = [];
    this.buffered = 0;
    try {
      this.write(lines);
      if (this.dropped !== undefined) this.options.onRecovered?.(this.dropped);
      this.dropped = undefined;
    } catch (err) {
      if (this.dropped === undefined) this.options.onError?.(err);
      this.dropped = (this.dropped ?? 0) + lines.length;
    }
  }

  /**
   * Writes what is buffered and opens the file by its path again (SIGHUP): a file moved away or deleted by
   * hand or by logrotate is started afresh instead of being written on unseen.
   */
  reopen(): void {
    this.flush();
    if (this.closed) return;
    const old = this.fd;
    try {
      this.fd = this.open();
    } catch (err) {
      this.options.onError?.(err);
      return;
    }
    this.size = fstatSync(this.fd).size;
    closeSync(old);
  }

  /** Writes what is buffered and closes the file; later lines are dropped. */
  close(): void {
    this.flush();
    this.closed = true;
    closeSync(this.fd);
  }

  private append(record: object): void {
    if (this.closed) return;
    const line = JSON.stringify(record) + "\n";
    this.buffer.push(line);
    this.buffered += line.length;
    if (this.buffered >= (this.options.flushBytes ?? 64 * 1024)) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.options.flushMs ?? 200);
      this.timer.unref?.();
    }
  }

  /** Writes `lines` in as few writes as the size limit allows, rotating between them. */
  private write(lines: string[]): void {
    let chunk = "";
    let chunkBytes = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      if (this.size + chunkBytes + bytes > this.options.maxBytes && this.size + chunkBytes > 0) {
        if (chunk) this.writeOut(chunk, chunkBytes);
        chunk = "";
        chunkBytes = 0;
        this.rotate();
      }
      chunk += line;
      chunkBytes += bytes;
    }
    if (chunk) this.writeOut(chunk, chunkBytes);
  }

  private writeOut(text: string, bytes: number): void {
    const data = Buffer.from(text);
    let done = 0;
    while (done < data.length) done += writeSync(this.fd, data, done);
    this.size += bytes;
  }

  /** Moves the files along, then opens a new one; the old descriptor is closed only once that worked. */
  private rotate(): void {
    const { path, keep } = this.options;
    if (keep === 0) rmSync(path, { force: true });
    else {
      rmSync(`${path}.${keep}`, { force: true });
      for (let i = keep - 1; i >= 1; i--) renameIfThere(`${path}.${i}`, `${path}.${i + 1}`);
      renameIfThere(path, `${path}.1`); // gone (removed by hand): a new file is started all the same
    }
    const old = this.fd;
    this.fd = this.open();
    this.size = 0;
    closeSync(old);
  }

  private open(): number {
    const fd = openSync(this.options.path, "a", 0o600);
    // A file made before (or by hand) keeps its mode on open: it is made the owner's alone here.
    fchmodSync(fd, 0o600);
    return fd;
  }
}

function renameIfThere(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}
