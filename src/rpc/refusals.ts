import { A2AError } from "../protocol/errors";
import { ConfigOwnedElsewhere, TooManyPushConfigs } from "../push/push-config-store";
import { TaskRefusal } from "../tasks/refusal";
import { RelayedRefusal, TaskStoreRequestError } from "../tasks/task-store";

/**
 * The one place where what tasks/, the executors and the stores refuse becomes the A2A error a client is shown
 * (its JSON-RPC code, and through it its HTTP+JSON status). Anything else is returned as it is: an A2AError
 * already, or a failure the transport reports as -32603. `caller`: the caller's name, for messages that name it.
 */
export function a2aErrorOf(err: unknown, caller?: string): unknown {
  if (err instanceof TaskRefusal) return refusalError(err);
  // Refused by the process that holds the task (an answer passed on to it): its error, as it sent it.
  if (err instanceof RelayedRefusal) return new A2AError(err.code, err.message, err.reason);
  if (err instanceof ConfigOwnedElsewhere) return A2AError.taskNotFound(err.taskId);
  if (err instanceof TooManyPushConfigs) {
    if (err.limit === "perTask")
      return A2AError.invalidParams(
        `the task already has ${err.held} push notification configs, this node's limit per task (max_push_configs_per_task = ${err.max}); delete one (DeleteTaskPushNotificationConfig) or replace one by its id`,
      );
    return A2AError.quota(
      `${caller ?? "this caller"} already has ${err.held} push notification configs on this node, its limit (max_push_configs_per_caller = ${err.max}); delete some, or wait until retention removes those of finished tasks`,
      "max_push_configs_per_caller",
    );
  }
  // A page token the store did not issue.
  if (err instanceof TaskStoreRequestError) return A2AError.invalidParams(err.message);
  return err;
}

function refusalError(r: TaskRefusal): A2AError {
  switch (r.kind) {
    case "invalid":
      return A2AError.invalidParams(r.message);
    case "not-found":
      return A2AError.taskNotFound(r.details.taskId ?? "");
    case "not-cancelable":
      return A2AError.taskNotCancelable(r.details.taskId ?? "", r.details.state ?? "");
    case "unsupported":
      return A2AError.unsupportedOperation(r.message);
    case "content-type":
      return A2AError.contentTypeNotSupported(r.message);
    case "push-not-supported":
      return A2AError.pushNotSupported();
    case "busy":
      return A2AError.busy(r.message);
    case "quota":
      return A2AError.quota(r.message, r.details.limit ?? "");
    case "not-stored":
      return A2AError.internal(r.message);
  }
}

/** Runs `call`, its refusals as A2A errors. */
export async function asA2A<T>(call: () => Promise<T>, caller?: string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw a2aErrorOf(err, caller);
  }
}
