/**
 * Why tasks/ (or an executor) turns a request down, in its own words. tasks/ knows nothing of the protocol's
 * errors: the surface above (rpc/refusals.ts) maps each kind to the A2A error a client is shown, in one place.
 */
export type RefusalKind =
  /**
   * The request as sent cannot be taken: a bad field, a message past a per-task limit, an answer its question turns
   * down.
   */
  | "invalid"
  /** No such task for this caller (another caller's task answers the same). */
  | "not-found"
  /** The task has ended: there is nothing to cancel. */
  | "not-cancelable"
  /** Not in the task's present state (ended, still working, held by another process), or not by this node. */
  | "unsupported"
  /** The executor cannot take this kind of content (a file it cannot pass on). */
  | "content-type"
  /** A webhook was asked for and push notifications are off. */
  | "push-not-supported"
  /** The node, or the caller's share of it, is at capacity: retry later. */
  | "busy"
  /** A limit of what one caller may store, or the disk's floor: `limit` names the setting. */
  | "quota"
  /** The node could not store the task (the store failed), so it is not kept. */
  | "not-stored";

export interface RefusalDetails {
  /** The task concerned (not-found, not-cancelable). */
  taskId?: string;
  /** Its state (not-cancelable). */
  state?: string;
  /** The setting whose limit was reached (quota). */
  limit?: string;
}

export class TaskRefusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    message: string,
    readonly details: RefusalDetails = {},
  ) {
    super(message);
    this.name = "TaskRefusal";
  }

  static invalid(message: string): TaskRefusal {
    return new TaskRefusal("invalid", message);
  }
  static notFound(taskId: string): TaskRefusal {
    return new TaskRefusal("not-found", `Task not found: ${taskId}`, { taskId });
  }
  static notCancelable(taskId: string, state: string): TaskRefusal {
    return new TaskRefusal("not-cancelable", `Task ${taskId} cannot be canceled: it is ${state}`, { taskId, state });
  }
  static unsupported(message: string): TaskRefusal {
    return new TaskRefusal("unsupported", message);
  }
  static contentType(message: string): TaskRefusal {
    return new TaskRefusal("content-type", message);
  }
  static pushNotSupported(): TaskRefusal {
    return new TaskRefusal("push-not-supported", "Push notifications are not supported");
  }
  static busy(message: string): TaskRefusal {
    return new TaskRefusal("busy", message);
  }
  static quota(message: string, limit: string): TaskRefusal {
    return new TaskRefusal("quota", message, { limit });
  }
  static notStored(message: string): TaskRefusal {
    return new TaskRefusal("not-stored", message);
  }
}
