/**
 * What the real Hermes server the tests run (A2A_REAL_HERMES) does with its scripted model (fake-tool-model.py),
 * as a fake Hermes script: the same markers in the task text give the same events, so one scenario list runs
 * against the real server and against the twin. The texts are the ones the real pair sends (observed on 0.18.2
 * with that model); the agent loop's own additions (reasoning.available, "\n\n" after a tool call, the
 * SessionDB) come from FakeRun.
 *
 * Markers (read from the run's user message):
 * - `DANGER-RM[:NAME]`: a terminal call `rm -rf SCRATCH/NAME`, which Hermes asks an approval for ("delete in
 *   root path"), then `FAKE-TOOL-DONE: <the tool's result>` (approved, denied, or timed out);
 * - `SAFE-ECHO`: a terminal call `echo hello-from-terminal`, run without asking;
 * - `chunks:N pace:MS`: N tokens "t00 t01 ..." MS ms apart (default 100);
 * - `sleep:N`: the model answers N seconds later (a stop cuts it short);
 * - anything else: `FAKE-MODEL-OK: <text> [user_turns=K]`, K the user turns the model saw (this one included).
 */
import type { RunRequest } from "./run";
import { hermes, type HermesStep } from "./script";

export interface MarkerOptions {
  /** The directory DANGER-RM names (the real server's DIR/scratch). Default /scratch. */
  scratch?: string;
}

/** The real tool results, as the model quotes them (their first 120 characters). */
const RESULTS = {
  approved: (pattern: string) =>
    `{"output": "", "exit_code": 0, "error": null, "approval": "Command required approval (${pattern}) and was approved by the user."}`,
  denied: `{"output": "", "exit_code": -1, "error": "BLOCKED: Command denied by user. The user has NOT consented to this action. Do not retry this command or attempt workarounds."}`,
  timedOut: `{"output": "", "exit_code": -1, "error": "BLOCKED: Command timed out without user response. Do not retry this command."}`,
  echo: `{"output": "hello-from-terminal", "exit_code": 0, "error": null}`,
};

/** The scripted model's usage per call ({prompt 11, completion 7}), summed over the run's calls as Hermes does. */
const usage = (calls: number) => ({ input_tokens: 11 * calls, output_tokens: 7 * calls, total_tokens: 18 * calls });

/** A plain text answer, streamed in three chunks as the scripted model does. */
function chunks(text: string): HermesStep[] {
  const step = Math.floor(text.length / 3) + 1;
  const out: HermesStep[] = [];
  for (let i = 0; i < text.length; i += step) out.push(hermes.delta(text.slice(i, i + step)));
  return out;
}

const toolDone = (result: string) => chunks(`FAKE-TOOL-DONE: ${result.slice(0, 120).replaceAll("\n", " ")}`);

export function markerScript(request: RunRequest, options: MarkerOptions = {}): HermesStep[] {
  const text = typeof request.userMessage === "string" ? request.userMessage : "";
  const scratch = options.scratch ?? "/scratch";
  const sleep = /sleep:(\d+(?:\.\d+)?)/.exec(text);
  const first: HermesStep[] = sleep ? [hermes.sleep(Number(sleep[1]) * 1000)] : [];

  const danger = /DANGER-RM(?::([A-Za-z0-9_.-]+))?/.exec(text);
  if (danger) {
    const command = `rm -rf ${scratch}/${danger[1] ?? "victim"}`;
    const pattern = "delete in root path";
    const after = (result: string, error: boolean): HermesStep[] => [
      hermes.toolCompleted("terminal", { measured: true, error }),
      ...toolDone(result),
      hermes.completed(undefined, usage(2)),
    ];
    return [
      ...first,
      hermes.toolStarted("terminal", command),
      hermes.approval(
        { command, description: pattern, patternKey: pattern },
        {
          once: after(RESULTS.approved(pattern), false),
          deny: after(RESULTS.denied, true),
          timeout: after(RESULTS.timedOut, true),
        },
      ),
    ];
  }
  if (text.includes("SAFE-ECHO"))
    return [
      ...first,
      hermes.toolStarted("terminal", "echo hello-from-terminal"),
      hermes.toolCompleted("terminal", { measured: true }),
      ...toolDone(RESULTS.echo),
      hermes.completed(undefined, usage(2)),
    ];

  const tokens = /chunks:(\d+)/.exec(text);
  if (tokens) {
    const pace = Number(/pace:(\d+)/.exec(text)?.[1] ?? 100);
    const out: HermesStep[] = [...first];
    for (let i = 0; i < Math.min(Number(tokens[1]), 1000); i++)
      out.push(hermes.sleep(pace), hermes.delta(`${i === 0 ? "" : " "}t${String(i).padStart(2, "0")}`));
    return [...out, hermes.completed(undefined, usage(1))];
  }
  const turns = request.history.filter((m) => m.role === "user").length + 1;
  return [...first, ...chunks(`FAKE-MODEL-OK: ${text} [user_turns=${turns}]`), hermes.completed(undefined, usage(1))];
}
