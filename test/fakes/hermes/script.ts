/**
 * What a fake Hermes run does, step by step: the `hermes.*` builders. A run plays its script on its own from the
 * moment POST /v1/runs admits it, whether or not anyone reads its event stream (as the real agent does); only
 * a gate or an approval makes it wait, so a test controls progress without timers.
 *
 * @example
 * startFakeHermes({ script: [
 *   hermes.delta("Checking the disk. "),
 *   ...hermes.tool("terminal", "df -h"),
 *   hermes.gate("before-deploy"),            // waits for fake.release("before-deploy")
 *   hermes.approval({ command: "kubectl rollout restart web", description: "restart a deployment" }, {
 *     deny: [hermes.delta("Not deploying."), hermes.completed()],
 *   }),
 *   hermes.delta("Deployed."),
 *   hermes.completed(),
 * ]});
 */

export type ApprovalChoice = "once" | "session" | "always" | "deny";

/** How an approval ended for the agent: a choice, the approvals.timeout elapsing, or a stop. */
export type ApprovalOutcome = ApprovalChoice | "timeout" | "interrupted";

/**
 * The dangerous-command prompt, as tools/approval.py builds `approval_data` (`_human_decision`): the newer
 * server sends every field; the older one (0.18.2) sends command, pattern_key, pattern_keys, description and
 * allow_permanent (smart_denied when set), no ids.
 */
export interface ApprovalSpec {
  command: string;
  description: string;
  /** Default: the description. */
  patternKey?: string;
  /** Default: [patternKey]. */
  patternKeys?: string[];
  /** false: no [always] (newer `choices` drops "always"). Default true. */
  allowPermanent?: boolean;
  /** false: once/deny only (newer; the older server has no such field). Default true. */
  allowSession?: boolean;
  /** A smart-approval DENY the owner may override: once/deny only. */
  smartDenied?: boolean;
}

/** Steps to run next, by how an approval ended. `session`/`always` fall back to `once`, `timeout` to `deny`. */
export type ApprovalBranches = Partial<Record<ApprovalChoice | "timeout", HermesStep[]>>;

/**
 * How the real server forwards an event, which decides where it goes once the reader left:
 * - "text": the stream_delta callback (message.delta)
 * - "progress": the tool_progress callback (tool.*, reasoning.available, subagent.*), dropped without a
 *   registered queue; the older server does not forward subagent events at all
 */
export type EmitChannel = "text" | "progress";

export type HermesStep =
  | {
      kind: "emit";
      event: string;
      fields: Record<string, unknown>;
      channel: EmitChannel;
      newerOnly?: boolean;
      measured?: boolean;
    }
  | { kind: "approval"; specs: ApprovalSpec[]; branches?: ApprovalBranches }
  | { kind: "gate"; label: string }
  | { kind: "sleep"; ms: number }
  | { kind: "complete"; output?: string; usage?: Usage }
  | { kind: "fail"; error: string };

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export const hermes = {
  /** `message.delta {delta}`: answer text (and narration before tool calls). */
  delta: (delta: string): HermesStep => ({ kind: "emit", event: "message.delta", fields: { delta }, channel: "text" }),

  /** `tool.started {tool, preview}` (preview may be null, as the agent sends None). */
  toolStarted: (tool: string, preview: string | null = null): HermesStep => ({
    kind: "emit",
    event: "tool.started",
    fields: { tool, preview },
    channel: "progress",
  }),

  /**
   * `tool.completed {tool, duration, error}`; duration is rounded to 3 decimals as the server does. `measured`:
   * the time since the run's last tool.started, approval wait included, as the real server measures it.
   */
  toolCompleted: (tool: string, opts: { duration?: number; error?: boolean; measured?: boolean } = {}): HermesStep => ({
    kind: "emit",
    event: "tool.completed",
    fields: { tool, duration: Math.round((opts.duration ?? 0.25) * 1000) / 1000, error: opts.error ?? false },
    channel: "progress",
    ...(opts.measured ? { measured: true } : {}),
  }),

  /** A tool call: tool.started then tool.completed. Spread it into a script. */
  tool: (
    tool: string,
    preview: string | null = null,
    opts: { duration?: number; error?: boolean } = {},
  ): HermesStep[] => [hermes.toolStarted(tool, preview), hermes.toolCompleted(tool, opts)],

  /**
   * `reasoning.available {text}` with text of the test's choosing (a server that sends real reasoning). The
   * real servers send one by themselves after each assistant message, with its visible text (see FakeRun).
   */
  reasoning: (text: string): HermesStep => ({
    kind: "emit",
    event: "reasoning.available",
    fields: { text },
    channel: "progress",
  }),

  /** `subagent.start` (newer only; the older server drops it). Fields as `_SUBAGENT_EVENT_KEYS`. */
  subagentStart: (fields: Record<string, unknown> = {}): HermesStep => ({
    kind: "emit",
    event: "subagent.start",
    fields,
    channel: "progress",
    newerOnly: true,
  }),

  /** `subagent.complete` (newer only). */
  subagentComplete: (fields: Record<string, unknown> = {}): HermesStep => ({
    kind: "emit",
    event: "subagent.complete",
    fields,
    channel: "progress",
    newerOnly: true,
  }),

  /** Any other event (for "unknown events are tolerated" tests); forwarded like tool progress. */
  event: (event: string, fields: Record<string, unknown> = {}): HermesStep => ({
    kind: "emit",
    event,
    fields,
    channel: "progress",
  }),

  /**
   * The agent asks a person: `approval.request`, run status `waiting_for_approval`; the run blocks until POST
   * /approval answers it, the approval timeout denies it, or the run is stopped. Then `branches[outcome]` runs
   * (if given) before the rest of the script.
   */
  approval: (spec: ApprovalSpec, branches?: ApprovalBranches): HermesStep => ({
    kind: "approval",
    specs: [spec],
    branches,
  }),

  /**
   * Several approvals pending at once (parallel tool calls): all requested together, the run goes on once every
   * one is settled. Branches follow the first one's outcome.
   */
  approvals: (specs: ApprovalSpec[], branches?: ApprovalBranches): HermesStep => ({
    kind: "approval",
    specs,
    branches,
  }),

  /** The run waits here until the test calls `fake.release(label)` (or the run is stopped). */
  gate: (label: string): HermesStep => ({ kind: "gate", label }),

  /** A run that goes quiet until it is stopped (a gate nobody releases). */
  stall: (): HermesStep => ({ kind: "gate", label: "stall" }),

  /**
   * A slow model call: the run waits `ms` (a stop or a shutdown cuts it short). For scripts that mirror the real
   * server's scripted model (`sleep:N`, `pace:MS`); tests that control progress use gates.
   */
  sleep: (ms: number): HermesStep => ({ kind: "sleep", ms }),

  /**
   * `run.completed {output, usage}`. Default output: the deltas since the last tool call or approval (the final
   * answer alone, as `final_response` is); default usage counts words.
   */
  completed: (output?: string, usage?: Usage): HermesStep => ({ kind: "complete", output, usage }),

  /** `run.failed {error}`. */
  failed: (error: string): HermesStep => ({ kind: "fail", error }),
};

/** The steps to run after an approval ended this way (see ApprovalBranches). */
export function branchFor(branches: ApprovalBranches | undefined, outcome: ApprovalOutcome): HermesStep[] {
  if (!branches || outcome === "interrupted") return [];
  if (outcome === "session" || outcome === "always") return branches[outcome] ?? branches.once ?? [];
  if (outcome === "timeout") return branches.timeout ?? branches.deny ?? [];
  return branches[outcome] ?? [];
}

/**
 * `_approval_event_choices` of each generation's api_server.py: a smart-denied prompt offers once/deny, one
 * without the permanent option drops "always"; the newer one also drops "session" for allow_session false (the
 * older has no allow_session).
 */
export function choicesFor(spec: ApprovalSpec, generation: "older" | "newer" = "newer"): ApprovalChoice[] {
  if (spec.smartDenied || (generation === "newer" && spec.allowSession === false)) return ["once", "deny"];
  return spec.allowPermanent === false ? ["once", "session", "deny"] : ["once", "session", "always", "deny"];
}

const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/** A plausible usage block when the script gives none. */
export function defaultUsage(input: string, output: string): Usage {
  const i = words(input) + 20;
  const o = words(output);
  return { input_tokens: i, output_tokens: o, total_tokens: i + o };
}
