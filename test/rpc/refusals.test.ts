/**
 * The one mapping of tasks/'s refusals (and the stores' and push configs') to A2A errors: each kind keeps the
 * JSON-RPC code, ErrorInfo reason and message it had when tasks/ threw A2AError itself.
 */
import { describe, expect, it } from "vitest";
import { A2AError } from "../../src/protocol/errors";
import { ConfigOwnedElsewhere, TooManyPushConfigs } from "../../src/push/push-config-store";
import { a2aErrorOf } from "../../src/rpc/refusals";
import { TaskRefusal } from "../../src/tasks/refusal";
import { RelayedRefusal, TaskStoreRequestError } from "../../src/tasks/task-store";

function mapped(err: unknown, caller?: string): A2AError {
  const out = a2aErrorOf(err, caller);
  expect(out).toBeInstanceOf(A2AError);
  return out as A2AError;
}

describe("a2aErrorOf", () => {
  it.each([
    [TaskRefusal.invalid("bad"), -32602, "INVALID_PARAMS", "bad"],
    [TaskRefusal.notFound("t1"), -32001, "TASK_NOT_FOUND", "Task not found: t1"],
    [
      TaskRefusal.notCancelable("t1", "TASK_STATE_COMPLETED"),
      -32002,
      "TASK_NOT_CANCELABLE",
      "Task t1 cannot be canceled: it is TASK_STATE_COMPLETED",
    ],
    [TaskRefusal.unsupported("not now"), -32004, "UNSUPPORTED_OPERATION", "not now"],
    [TaskRefusal.contentType("no files"), -32005, "CONTENT_TYPE_NOT_SUPPORTED", "no files"],
    [TaskRefusal.pushNotSupported(), -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push notifications are not supported"],
    [TaskRefusal.busy("full"), -32603, "RESOURCE_EXHAUSTED", "full"],
    [TaskRefusal.quota("too much", "max_caller_bytes"), -32603, "RESOURCE_EXHAUSTED", "too much"],
    [TaskRefusal.notStored("disk"), -32603, "INTERNAL_ERROR", "disk"],
  ] as const)("maps %s to its A2A code, reason and message", (refusal, code, reason, message) => {
    const err = mapped(refusal);
    expect(err.code).toBe(code);
    expect(err.reason).toBe(reason);
    expect(err.message).toBe(message);
  });

  it("keeps the ErrorInfo metadata: the task of not-found, retry of busy, the limit of a quota", () => {
    expect(mapped(TaskRefusal.notFound("t1")).metadata).toEqual({ taskId: "t1" });
    expect(mapped(TaskRefusal.busy("full")).metadata).toEqual({ retry: "later" });
    expect(mapped(TaskRefusal.quota("too much", "max_caller_bytes")).metadata).toEqual({
      retry: "later",
      limit: "max_caller_bytes",
    });
  });

  it("a refusal relayed from the process that holds the task keeps that process's code and reason", () => {
    const err = mapped(new RelayedRefusal(-32602, "not a choice", "INVALID_PARAMS"));
    expect([err.code, err.reason, err.message]).toEqual([-32602, "INVALID_PARAMS", "not a choice"]);
  });

  it("maps the push configs' refusals, naming the caller at its limit", () => {
    expect(mapped(new ConfigOwnedElsewhere("t1")).code).toBe(-32001);
    expect(mapped(new TooManyPushConfigs("perTask", 3, 3)).message).toContain("max_push_configs_per_task = 3");
    const caller = mapped(new TooManyPushConfigs("perCaller", 5, 5), "alpha");
    expect(caller.metadata).toMatchObject({ limit: "max_push_configs_per_caller" });
    expect(caller.message).toMatch(/^alpha already has 5 push notification configs/);
    expect(mapped(new TaskStoreRequestError("pageToken is not one this node issued")).code).toBe(-32602);
  });

  it("leaves an A2AError, and any other failure, as they are", () => {
    const a2a = A2AError.invalidRequest();
    expect(a2aErrorOf(a2a)).toBe(a2a);
    const other = new Error("boom");
    expect(a2aErrorOf(other)).toBe(other);
  });
});
