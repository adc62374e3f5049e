/**
 * How many bytes a ListTasks page may carry, and which tasks fit. A page is planned from each task's stored
 * sizes (see the size columns of `tasks`) before any task is read, so a caller's listing costs the node at
 * most its budget in memory and serialisation, however large its tasks are.
 *
 * The rule: tasks are taken newest first while the page stays within `maxBytes` (and `pageSize`); the page
 * ends before the first task that would not fit, and the next page starts with it. A task larger than
 * `maxBytes` on its own is a page on its own, with parts left out until it fits, in this order: artifacts,
 * history, status message. A note in its metadata (OMITTED_KEY) says what was left out and why; GetTask
 * returns it whole. A task is cut the same way wherever it appears, whatever else is on its page.
 */

/** The default of `max_list_bytes`: a ListTasks response's tasks carry at most this many bytes of JSON. */
export const DEFAULT_MAX_LIST_BYTES = 256 * 1024;

/** The metadata key of the note on a task whose parts a listing left out. */
export const OMITTED_KEY = "a2a-node/omitted";

/**
 * What a task's JSON adds to its stored parts: its keys and punctuation, state and timestamp (about 130
 * bytes at most), and the omission note when there is one (about 250), rounded up.
 */
const TASK_OVERHEAD = 512;

/** The bytes of "[]": a task without artifacts has none to leave out. */
const EMPTY_LIST = 2;

/** A task's stored sizes, as the index holds them. */
export interface TaskSizes {
  id: string;
  statusTimestamp: string;
  /** id, contextId, status message and metadata. */
  headBytes: number;
  historyBytes: number;
  artifactsBytes: number;
}

export type OmittedPart = "artifacts" | "history" | "status.message";

export interface PlannedTask {
  id: string;
  statusTimestamp: string;
  /** Parts left out of this task (empty for every task that fits as it is). */
  omitted: OmittedPart[];
  /** Its size as stored, with what the request asked for: the number the note gives. */
  bytes: number;
}

export interface PageRequest {
  pageSize: number;
  maxBytes: number;
  /** false when historyLength is 0. */
  history: boolean;
  artifacts: boolean;
}

/**
 * Chooses the page among `candidates` (the next pageSize + 1 tasks, newest first). `more` is true when a
 * task was left for the next page.
 */
export function planPage(candidates: TaskSizes[], req: PageRequest): { tasks: PlannedTask[]; more: boolean } {
  const tasks: PlannedTask[] = [];
  let used = 0;
  for (const c of candidates) {
    if (tasks.length === req.pageSize) break;
    // An upper bound: with historyLength N the node counts the whole stored history.
    const bytes =
      TASK_OVERHEAD + c.headBytes + (req.history ? c.historyBytes : 0) + (req.artifacts ? c.artifactsBytes : 0);
    if (bytes > req.maxBytes) {
      if (tasks.length === 0)
        tasks.push({ id: c.id, statusTimestamp: c.statusTimestamp, omitted: omissions(c, req, bytes), bytes });
      break;
    }
    if (used + bytes > req.maxBytes) break;
    used += bytes;
    tasks.push({ id: c.id, statusTimestamp: c.statusTimestamp, omitted: [], bytes });
  }
  return { tasks, more: candidates.length > tasks.length };
}

/** The parts to leave out of a task of `bytes` larger than the budget, in the documented order. */
function omissions(c: TaskSizes, req: PageRequest, bytes: number): OmittedPart[] {
  const out: OmittedPart[] = [];
  let left = bytes;
  if (req.artifacts && c.artifactsBytes > EMPTY_LIST) {
    out.push("artifacts");
    left -= c.artifactsBytes;
  }
  if (left > req.maxBytes && req.history) {
    out.push("history");
    left -= c.historyBytes;
  }
  if (left > req.maxBytes) out.push("status.message");
  return out;
}

/** The note put in the metadata of a task whose parts were left out. */
export function omissionNote(task: PlannedTask, maxBytes: number): Record<string, unknown> {
  return {
    parts: task.omitted,
    taskBytes: task.bytes,
    maxListBytes: maxBytes,
    reason: `this task is larger than a ListTasks response may carry on this node (max_list_bytes); GetTask returns it whole`,
  };
}
