import type { Artifact, Message } from "../protocol/types";
import { newId } from "../clock";

/*
 * What the runner does to the pieces of a task's output: cutting them to the output cap, folding streamed
 * chunks into the task's artifacts, and wording its own status messages.
 */

/** Keeps an artifact's text within `room` bytes; `over` when something had to be cut. */
export function capParts(a: Artifact, room: number): { artifact: Artifact; bytes: number; over: boolean } {
  let bytes = 0;
  let over = false;
  const parts = a.parts.map((p) => {
    if (typeof p.text !== "string") return p;
    const size = Buffer.byteLength(p.text);
    if (bytes + size <= room) {
      bytes += size;
      return p;
    }
    over = true;
    const keep = Buffer.from(p.text)
      .subarray(0, Math.max(0, room - bytes))
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    bytes += Buffer.byteLength(keep);
    return { ...p, text: keep };
  });
  return { artifact: over ? { ...a, parts } : a, bytes, over };
}

export function agentMessage(taskId: string, contextId: string | undefined, text: string): Message {
  const m: Message = { messageId: newId(), role: "ROLE_AGENT", parts: [{ text }], taskId };
  if (contextId) m.contextId = contextId;
  return m;
}

/**
 * Applies an artifact event to the task's artifacts: a new id is added, `append` extends, otherwise replaces.
 * Appended text joins the previous text part, so a streamed answer is stored as one text, not one part per
 * token; an appended chunk's metadata is merged into the artifact's.
 */
export function accumulate(artifacts: Artifact[], a: Artifact, append: boolean): Artifact[] {
  const i = artifacts.findIndex((x) => x.artifactId === a.artifactId);
  if (i === -1) return [...artifacts, { ...a, parts: [...a.parts] }];
  const out = [...artifacts];
  if (!append) {
    out[i] = { ...a, parts: [...a.parts] };
    return out;
  }
  const parts = [...out[i].parts];
  for (const p of a.parts) {
    const last = parts[parts.length - 1];
    if (last && typeof last.text === "string" && typeof p.text === "string" && !last.metadata && !p.metadata)
      parts[parts.length - 1] = { ...last, text: last.text + p.text };
    else parts.push(p);
  }
  // An appended chunk may carry the artifact's metadata (known only at its end): merged into what it had.
  out[i] = a.metadata ? { ...out[i], parts, metadata: { ...out[i].metadata, ...a.metadata } } : { ...out[i], parts };
  return out;
}

/**
 * What a part adds to a task's artifacts, in bytes, as max_artifact_bytes counts it: its content (text as
 * UTF-8, raw as its base64 text, a URL, data as JSON) and its metadata as JSON. Names and media types are
 * small and not counted.
 */
export function partBytes(p: Artifact["parts"][number]): number {
  let n = 0;
  if (typeof p.text === "string") n += Buffer.byteLength(p.text);
  if (typeof p.raw === "string") n += p.raw.length;
  if (typeof p.url === "string") n += Buffer.byteLength(p.url);
  if (p.data !== undefined) n += Buffer.byteLength(JSON.stringify(p.data) ?? "");
  if (p.metadata !== undefined) n += Buffer.byteLength(JSON.stringify(p.metadata) ?? "");
  return n;
}

/**
 * What a message adds to a task, in bytes, as max_task_bytes counts it: its parts (as partBytes) and its metadata as
 * JSON.
 */
export function messageBytes(m: Message): number {
  let n = 0;
  for (const p of m.parts ?? []) n += partBytes(p);
  if (m.metadata !== undefined) n += Buffer.byteLength(JSON.stringify(m.metadata) ?? "");
  return n;
}

/** The bytes of a task's history, as max_task_bytes counts them. */
export function historyBytes(history: readonly Message[] | undefined): number {
  let n = 0;
  for (const m of history ?? []) n += messageBytes(m);
  return n;
}

/**
 * The bytes of a task's artifacts, kept per artifact so a streamed chunk costs only its own size: appended
 * chunks add to their artifact's count, a re-sent artifact replaces it (see accumulate).
 */
export class ArtifactSizes {
  private readonly sizes = new Map<string, number>();
  total = 0;

  constructor(artifacts: Artifact[] = []) {
    for (const a of artifacts) this.add(a, false);
  }

  /** The total once `a` is applied (appended or replacing), without applying it. */
  after(a: Artifact, append: boolean): number {
    const bytes = a.parts.reduce((n, p) => n + partBytes(p), 0);
    const before = this.sizes.get(a.artifactId) ?? 0;
    return append ? this.total + bytes : this.total - before + bytes;
  }

  add(a: Artifact, append: boolean): void {
    const total = this.after(a, append);
    const before = this.sizes.get(a.artifactId) ?? 0;
    this.sizes.set(a.artifactId, before + (total - this.total));
    this.total = total;
  }
}
