/**
 * Judges one input's outcome: what the node answered (HTTP status, JSON-RPC result or error code), how the
 * connection ended, and which findings it makes, if any. A finding is something a correct node never does.
 */
import type { FuzzInput, Listener } from "./input";
import type { Answer, Outcome } from "./wire";

export type Finding =
  /** Neither an answer nor a close within the limit (for an incomplete input: past the node's own timer). */
  | "hang"
  /** HTTP 5xx other than 501/505 (refusals of what the node does not implement). */
  | "unexpected-5xx"
  /** JSON-RPC -32603 that is not the node saying it is busy. */
  | "internal-error"
  /** A well-formed request closed without (all of) its answers. */
  | "dropped"
  /** Answer bytes that break HTTP/1.1, or JSON-RPC answers that are not JSON-RPC. */
  | "bad-answer"
  /** An answer naming a task made by the other listener's caller. */
  | "scope-violation"
  /** An answer over TLS without a fleet certificate, or /health naming the wrong caller. */
  | "identity-violation";

export interface Verdict {
  statuses: number[];
  /**
   * Per answer (per event of a stream): "result", "none" (204), "sse", the JSON-RPC error code, "rest" or
   * "rest STATUS" for the HTTP+JSON binding, or "-" for an answer of neither binding.
   */
  rpc: string[];
  end: Outcome["end"];
  findings: Finding[];
  /** 501/505 answers: legitimate refusals, counted apart. */
  refusals5xx: number;
  /** Task ids the node named in its results (each must be on disk after the run). */
  taskIds: string[];
  detail?: string;
}

export const CALLER_NAME: Record<Listener, string> = { mtls: "fuzz-client", plain: "@local" };

interface RpcSummary {
  code: string;
  internal: boolean;
  malformed?: string;
  taskIds: string[];
}

/** What one JSON-RPC response object says. */
function rpcResponse(v: unknown): RpcSummary {
  const out: RpcSummary = { code: "result", internal: false, taskIds: [] };
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { ...out, code: "?", malformed: "not an object" };
  const r = v as Record<string, unknown>;
  if (r.jsonrpc !== "2.0") out.malformed = "jsonrpc is not 2.0";
  if ("result" in r === "error" in r) out.malformed = "needs exactly one of result and error";
  if ("error" in r) {
    const e = r.error as Record<string, unknown> | null;
    if (typeof e?.code !== "number" || !Number.isInteger(e.code) || typeof e.message !== "string")
      return { ...out, code: "?", malformed: "error without integer code and message" };
    out.code = String(e.code);
    // Busy is -32603 too, but says so: RESOURCE_EXHAUSTED (v1.0) or retry: later (v0.3).
    const busy = JSON.stringify(e.data ?? null).match(/RESOURCE_EXHAUSTED|"retry":"later"/);
    out.internal = e.code === -32603 && !busy;
    return out;
  }
  collectTaskIds(r.result, out.taskIds);
  return out;
}

/** Task ids in a result: a task, a SendMessage/stream result holding one, a page of tasks, an update. */
function collectTaskIds(result: unknown, into: string[]): void {
  if (typeof result !== "object" || result === null) return;
  const r = result as Record<string, any>;
  if (typeof r.id === "string" && ("status" in r || r.kind === "task")) into.push(r.id);
  if (typeof r.task?.id === "string") into.push(r.task.id);
  if (Array.isArray(r.tasks)) for (const t of r.tasks) if (typeof t?.id === "string") into.push(t.id);
  for (const k of ["statusUpdate", "artifactUpdate"]) if (typeof r[k]?.taskId === "string") into.push(r[k].taskId);
  if ((r.kind === "status-update" || r.kind === "artifact-update") && typeof r.taskId === "string") into.push(r.taskId);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

function summariseAnswer(a: Answer, method: string, binding: "rest" | "other"): RpcSummary[] {
  const type = a.headers.get("content-type") ?? "";
  if (a.status === 204) return [{ code: "none", internal: false, taskIds: [] }];
  if (method === "HEAD" || a.status === 304) return [{ code: "-", internal: false, taskIds: [] }];
  if (type.startsWith("text/event-stream")) {
    const events = a.body
      .toString("utf8")
      .split("\n\n")
      .filter((e) => e.trim() && !e.startsWith(":"));
    const out: RpcSummary[] = [];
    for (const e of events) {
      const data = e
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5))
        .join("\n");
      const v = parseJson(Buffer.from(data));
      if (v === undefined) out.push({ code: "?", internal: false, malformed: "SSE data is not JSON", taskIds: [] });
      else out.push(typeof v === "object" && v !== null && "jsonrpc" in v ? rpcResponse(v) : restResponse(v, 200));
    }
    return out.length
      ? out.map((s) => (s.code === "result" ? { ...s, code: "sse" } : s))
      : [{ code: "sse", internal: false, taskIds: [] }];
  }
  if (!type.startsWith("application/json")) return [{ code: "-", internal: false, taskIds: [] }];
  const v = parseJson(a.body);
  if (v === undefined) return [{ code: "?", internal: false, malformed: "JSON answer does not parse", taskIds: [] }];
  if (typeof v === "object" && v !== null && !Array.isArray(v) && "jsonrpc" in v) return [rpcResponse(v)];
  // HTTP+JSON binding: a result as it is, or a google.rpc.Status error. Other JSON (the agent card, /health,
  // the OpenAPI document) has neither.
  if (binding === "rest") return [restResponse(v, a.status)];
  return [{ code: "-", internal: false, taskIds: [] }];
}

/** An HTTP+JSON answer: its google.rpc.Status name when an error ("rest NOT_FOUND"), else "rest", with task ids. */
function restResponse(v: unknown, status: number): RpcSummary {
  const e = (v as { error?: { status?: unknown; code?: unknown } } | null)?.error;
  if (e && typeof e === "object") {
    if (typeof e.status !== "string" || typeof e.code !== "number")
      return { code: "?", internal: false, malformed: "error without google.rpc.Status code and status", taskIds: [] };
    return { code: `rest ${e.status}`, internal: e.status === "INTERNAL", taskIds: [] };
  }
  const out: RpcSummary = {
    code: status >= 200 && status < 300 ? "rest" : `rest ${status}`,
    internal: false,
    taskIds: [],
  };
  collectTaskIds(v, out.taskIds);
  return out;
}

/**
 * `foreignIds`: tasks the other listener's caller was told about; none may ever appear in an answer here.
 */
export function judge(input: FuzzInput, o: Outcome, foreignIds: ReadonlySet<string>): Verdict {
  const findings = new Set<Finding>();
  const details: string[] = [];
  const v: Verdict = {
    statuses: o.answers.map((a) => a.status),
    rpc: [],
    end: o.end,
    findings: [],
    refusals5xx: 0,
    taskIds: [],
  };
  for (const [k, a] of o.answers.entries()) {
    if (a.status === 501 || a.status === 505) v.refusals5xx++;
    else if (a.status >= 500) {
      findings.add("unexpected-5xx");
      details.push(`HTTP ${a.status}: ${a.body.toString("utf8", 0, 200)}`);
    }
    const sums = summariseAnswer(a, input.methods[k] ?? "?", input.family === "rest" ? "rest" : "other");
    for (const s of sums) {
      v.rpc.push(s.code);
      if (s.internal) (findings.add("internal-error"), details.push(`-32603: ${a.body.toString("utf8", 0, 300)}`));
      if (s.malformed) (findings.add("bad-answer"), details.push(`${s.malformed}: ${a.body.toString("utf8", 0, 200)}`));
      for (const id of s.taskIds) {
        v.taskIds.push(id);
        if (foreignIds.has(id))
          (findings.add("scope-violation"), details.push(`answer names task ${id} of the other caller`));
      }
    }
    const json = a.headers.get("content-type")?.startsWith("application/json") ? parseJson(a.body) : undefined;
    if (
      json &&
      typeof json === "object" &&
      (json as any).status === "ok" &&
      "caller" in json &&
      (json as any).caller !== CALLER_NAME[input.listener]
    ) {
      findings.add("identity-violation");
      details.push(`/health says the caller is ${JSON.stringify((json as any).caller)}`);
    }
  }
  if ((input.transport === "tls-no-cert" || input.transport === "tls-foreign") && o.answers.length > 0) {
    findings.add("identity-violation");
    details.push(
      `an answer over TLS with ${input.transport === "tls-no-cert" ? "no client certificate" : "a foreign certificate"}`,
    );
  }
  if (o.badAnswer) (findings.add("bad-answer"), details.push(o.badAnswer));
  if (o.end === "timeout") {
    findings.add("hang");
    details.push(
      input.expect === "node-timeout"
        ? `not ended by the node's ${input.nodeTimeout} timer`
        : `no answer and no close after ${Math.round(o.ms)} ms`,
    );
  }
  if (input.expect === "answer" && (o.end === "closed" || o.end === "refused")) {
    findings.add("dropped");
    details.push(
      `${o.answers.length} of ${input.responses} answers, then ${o.end === "refused" ? "the connection was refused" : "closed"}${o.error ? ` (${o.error})` : ""}${o.cutShort ? `; ${o.cutShort}` : ""}`,
    );
  }
  v.findings = [...findings];
  if (details.length) v.detail = details.join("; ");
  return v;
}
