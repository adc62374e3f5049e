/**
 * A documented debug setting, for testing what survives a crash at one exact point (not a timing race): with
 * `A2A_NODE_CRASH_AT=POINT` in its environment, the node kills itself with SIGKILL the first time it gets
 * there. Points:
 *
 * - `event-committed`: a commit that stored task events has just committed, and nothing else has been told of
 *   it yet (no subscriber, no push dispatcher, no caller).
 *
 * Read once at start; unset (always, in service), a point costs one comparison.
 */
const CRASH_AT = process.env.A2A_NODE_CRASH_AT;

export type CrashPoint = "event-committed";

/** Kills the process here if A2A_NODE_CRASH_AT names this point and `when` (asked only then) holds. */
export function crashPoint(point: CrashPoint, when: () => boolean = () => true): void {
  if (CRASH_AT !== point || !when()) return;
  process.kill(process.pid, "SIGKILL");
}
