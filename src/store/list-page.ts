import type { ListTasksParams, ListTasksResult, Task } from "../protocol/types";
import { OMITTED_KEY, omissionNote, planPage, type PlannedTask, type TaskSizes } from "./list-budget";
import { encodePageToken } from "./page-token";
import { assemble, type TaskColumns } from "./task-rows";

/** Tasks on a ListTasks page when the request does not say. */
export const DEFAULT_PAGE_SIZE = 50;

/** Which parts of a planned task its read carries (see list-budget.ts: a task larger than the page leaves some out). */
export interface ListedParts {
  artifacts: boolean;
  history: boolean;
  /** The status message. */
  message: boolean;
}

/** A listed task's row as read with listedColumns: `had_message` says whether a left-out status message existed. */
export interface ListedRow extends TaskColumns {
  had_message: boolean | number;
}

/**
 * The columns a listed task is read with: those of the parts it carries, and '[]' or NULL in place of the others,
 * so a part the page leaves out is never read. `no`: the dialect's false (SQLite 0, Postgres false).
 */
export function listedColumns(parts: ListedParts, no: string): string {
  const { artifacts, history, message } = parts;
  return `id, context_id, state, status_timestamp, metadata,
    ${message ? "status_message" : "NULL"} AS status_message, ${message ? no : "status_message IS NOT NULL"} AS had_message,
    ${history ? "history" : "'[]'"} AS history, ${artifacts ? "artifacts" : "'[]'"} AS artifacts`;
}

/**
 * A ListTasks page from `candidates` (the next pageSize + 1 tasks after the cursor, newest first, with their
 * stored sizes): planned within `maxBytes` (see planPage), each planned task read by `read` with the parts it
 * carries, a task cut to fit noted in its metadata (OMITTED_KEY), and the token of the next page. The backends
 * differ only in their queries: which candidates, how a task is read, and the total count the caller adds.
 */
export async function pageOf(
  candidates: TaskSizes[],
  params: ListTasksParams,
  maxBytes: number,
  read: (taskId: string, parts: ListedParts) => ListedRow | Promise<ListedRow>,
): Promise<Omit<ListTasksResult, "totalSize">> {
  const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
  const withArtifacts = params.includeArtifacts ?? false;
  const plan = planPage(candidates, {
    pageSize,
    maxBytes,
    history: params.historyLength !== 0,
    artifacts: withArtifacts,
  });
  const listed = async (p: PlannedTask): Promise<Task> => {
    const parts = {
      artifacts: withArtifacts && !p.omitted.includes("artifacts"),
      history: params.historyLength !== 0 && !p.omitted.includes("history"),
      message: !p.omitted.includes("status.message"),
    };
    const row = await read(p.id, parts);
    const task = assemble(row, parts.history ? params.historyLength : 0, parts.artifacts);
    if (p.omitted.length) {
      const omitted = row.had_message ? p.omitted : p.omitted.filter((part) => part !== "status.message");
      task.metadata = { ...task.metadata, [OMITTED_KEY]: omissionNote({ ...p, omitted }, maxBytes) };
    }
    return task;
  };
  const last = plan.tasks[plan.tasks.length - 1];
  return {
    tasks: await Promise.all(plan.tasks.map(listed)),
    nextPageToken: plan.more && last ? encodePageToken(last.statusTimestamp, last.id) : "",
    pageSize,
  };
}
