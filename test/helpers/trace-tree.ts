/**
 * Reading what an OTLP receiver (test/fakes/otlp-receiver.ts) got as traces: each span with the resource of the
 * process that sent it, one trace's spans checked for their parent links, and a trace drawn as an indented text
 * tree (which the tests print, and issue 24's closing note quotes).
 */
import type { OtlpReceiver, ReceivedSpan } from "../fakes/otlp-receiver";

export interface TracedSpan extends ReceivedSpan {
  /** The resource of the export that carried the span: which process made it. */
  resource: Record<string, string | number | boolean>;
}

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"];

/** Every span the receiver accepted, with its sender's resource. */
export function receivedSpans(receiver: OtlpReceiver): TracedSpan[] {
  return receiver.requests.flatMap((r) => r.spans.map((s) => ({ ...s, resource: r.resource })));
}

/** The spans of one trace. */
export function spansOf(receiver: OtlpReceiver, traceId: string): TracedSpan[] {
  return receivedSpans(receiver).filter((s) => s.traceId === traceId);
}

/**
 * Resolves with a trace's spans once `done` holds for them: on each export the receiver accepts (an event, no
 * polling). A test's own timeout bounds it.
 */
export async function waitForTrace(
  receiver: OtlpReceiver,
  traceId: string,
  done: (spans: TracedSpan[]) => boolean,
): Promise<TracedSpan[]> {
  for (;;) {
    const spans = spansOf(receiver, traceId);
    if (done(spans)) return spans;
    await receiver.waitForSpans(receivedSpans(receiver).length + 1);
  }
}

/**
 * What is wrong with a trace's links: more or less than one root, a parent that is not among the spans, a span
 * id seen twice. An empty list is a whole trace.
 */
export function linkProblems(spans: TracedSpan[]): string[] {
  const problems: string[] = [];
  const ids = new Map<string, TracedSpan>();
  for (const s of spans) {
    if (ids.has(s.spanId)) problems.push(`span id ${s.spanId} (${s.name}) received twice`);
    ids.set(s.spanId, s);
  }
  const roots = spans.filter((s) => !s.parentSpanId);
  if (roots.length !== 1) problems.push(`${roots.length} roots: ${roots.map((r) => r.name).join(", ") || "none"}`);
  for (const s of spans)
    if (s.parentSpanId && !ids.has(s.parentSpanId))
      problems.push(`${s.name} (${s.spanId}) has parent ${s.parentSpanId}, which is not in the trace`);
  return problems;
}

/** The chain of parents of `span`, nearest first, as far as the received spans go. */
export function ancestors(spans: TracedSpan[], span: TracedSpan): TracedSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const out: TracedSpan[] = [];
  for (let p = span.parentSpanId && byId.get(span.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId))
    out.push(p);
  return out;
}

/** The attributes a line of the tree shows, when a span has them. */
const SHOWN = [
  "rpc.method",
  "a2a.peer.name",
  "a2a.caller.name",
  "a2a.task.id",
  "a2a.task.state",
  "a2a.executor",
  "gen_ai.request.model",
  "http.response.status_code",
  "error.type",
];

/**
 * One line per span, children under their parent (by start time), indented two spaces a level:
 *   name  [kind, who]  duration  attribute=value ...
 * `who` is the sending process: its resource's service.instance.id, else its process.command, else its
 * service.name. A span whose parent was not received starts a tree of its own, marked so.
 */
export function traceTree(spans: TracedSpan[]): string {
  const byId = new Set(spans.map((s) => s.spanId));
  const children = new Map<string, TracedSpan[]>();
  const tops: TracedSpan[] = [];
  for (const s of spans) {
    if (s.parentSpanId && byId.has(s.parentSpanId))
      children.set(s.parentSpanId, [...(children.get(s.parentSpanId) ?? []), s]);
    else tops.push(s);
  }
  const start = (s: TracedSpan) => BigInt(s.startTimeUnixNano);
  const order = (a: TracedSpan, b: TracedSpan) => (start(a) < start(b) ? -1 : start(a) > start(b) ? 1 : 0);
  const lines: string[] = [];
  const draw = (s: TracedSpan, depth: number) => {
    const ms = Number(BigInt(s.endTimeUnixNano) - start(s)) / 1e6;
    const who = s.resource["service.instance.id"] ?? s.resource["process.command"] ?? s.resource["service.name"];
    const attrs = SHOWN.filter((k) => s.attributes[k] !== undefined).map((k) => `${k}=${s.attributes[k]}`);
    const orphan = depth === 0 && s.parentSpanId ? ` (parent ${s.parentSpanId} not received)` : "";
    lines.push(
      `${"  ".repeat(depth)}${s.name}  [${KINDS[s.kind] ?? s.kind}, ${who}]  ${ms.toFixed(1)} ms${
        s.status.code === 2 ? "  FAILED" : ""
      }${attrs.length ? `  ${attrs.join(" ")}` : ""}${orphan}`,
    );
    for (const c of (children.get(s.spanId) ?? []).sort(order)) draw(c, depth + 1);
  };
  for (const t of tops.sort(order)) draw(t, 0);
  return lines.join("\n");
}
