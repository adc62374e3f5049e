import { A2AError } from "../errors";
import { isObj, bad, nonEmptyString, optBool, optObject } from "../field-checks";
import type { SendMessageResult, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "../types";
import { isSettled } from "../types";
import {
  toV03Message,
  toV03Artifact,
  fromV03Artifact,
  toV03TaskStatus,
  fromV03TaskStatus,
  toV03Task,
} from "./messages";
import type { V03Message, V03Task, V03TaskStatusUpdateEvent, V03TaskArtifactUpdateEvent, V03Event } from "./shapes";
import { checkKind, compact } from "./wire-checks";

/* Stream events between v1.0 and v0.3. */

/** `final` is set once the task is terminal or interrupted: the point where our streams close. */
export function toV03StatusUpdate(e: TaskStatusUpdateEvent): V03TaskStatusUpdateEvent {
  return compact<V03TaskStatusUpdateEvent>({
    kind: "status-update",
    taskId: e.taskId,
    contextId: e.contextId,
    status: toV03TaskStatus(e.status),
    final: isSettled(e.status.state),
    metadata: e.metadata && { ...e.metadata },
  });
}

export function fromV03StatusUpdate(e: unknown, where = "event"): TaskStatusUpdateEvent {
  if (!isObj(e)) throw bad(`${where} must be an object`);
  checkKind(e, "status-update", where);
  const metadata = optObject(e, "metadata", where);
  return compact<TaskStatusUpdateEvent>({
    taskId: nonEmptyString(e, "taskId", where),
    contextId: nonEmptyString(e, "contextId", where),
    status: fromV03TaskStatus(e.status, `${where}.status`),
    metadata: metadata && { ...metadata },
  });
}

export function toV03ArtifactUpdate(e: TaskArtifactUpdateEvent): V03TaskArtifactUpdateEvent {
  return compact<V03TaskArtifactUpdateEvent>({
    kind: "artifact-update",
    taskId: e.taskId,
    contextId: e.contextId,
    artifact: toV03Artifact(e.artifact),
    append: e.append,
    lastChunk: e.lastChunk,
    metadata: e.metadata && { ...e.metadata },
  });
}

export function fromV03ArtifactUpdate(e: unknown, where = "event"): TaskArtifactUpdateEvent {
  if (!isObj(e)) throw bad(`${where} must be an object`);
  checkKind(e, "artifact-update", where);
  const metadata = optObject(e, "metadata", where);
  return compact<TaskArtifactUpdateEvent>({
    taskId: nonEmptyString(e, "taskId", where),
    contextId: nonEmptyString(e, "contextId", where),
    artifact: fromV03Artifact(e.artifact, `${where}.artifact`),
    append: optBool(e, "append", where),
    lastChunk: optBool(e, "lastChunk", where),
    metadata: metadata && { ...metadata },
  });
}

/** One v1.0 stream item as the v0.3 event object (the JSON-RPC `result` of one SSE line). */
export function toV03Event(r: StreamResponse): V03Event {
  if ("task" in r) return toV03Task(r.task);
  if ("message" in r) return toV03Message(r.message);
  if ("statusUpdate" in r) return toV03StatusUpdate(r.statusUpdate);
  if ("artifactUpdate" in r) return toV03ArtifactUpdate(r.artifactUpdate);
  throw A2AError.internal("a stream item had none of task, message, statusUpdate or artifactUpdate");
}

/** v0.3 `message/send` answers the Task or Message itself (with `kind`), not wrapped in {task}/{message}. */
export function toV03SendResult(r: SendMessageResult): V03Task | V03Message {
  return "task" in r ? toV03Task(r.task) : toV03Message(r.message);
}
