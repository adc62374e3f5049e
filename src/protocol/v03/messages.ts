import { isObj, bad, absent, optString, nonEmptyString, optObject, optStringArray } from "../field-checks";
import type { Artifact, Message, Task, TaskStatus } from "../types";
import * as validate from "../validate";
import { toV03Part, fromV03Part } from "./parts";
import type { V03Message, V03TaskStatus, V03Artifact, V03Task } from "./shapes";
import { toV03State, fromV03State } from "./states";
import { checkKind, compact, nonEmpty, nonEmptyList } from "./wire-checks";

/* Messages, artifacts, task statuses and tasks between v1.0 and v0.3. */

export function toV03Message(m: Message): V03Message {
  return compact<V03Message>({
    kind: "message",
    messageId: m.messageId,
    role: m.role === "ROLE_USER" ? "user" : "agent",
    parts: m.parts.map(toV03Part),
    contextId: nonEmpty(m.contextId),
    taskId: nonEmpty(m.taskId),
    metadata: m.metadata && { ...m.metadata },
    extensions: nonEmptyList(m.extensions),
    referenceTaskIds: nonEmptyList(m.referenceTaskIds),
  });
}

/** A v0.3 message from a client, as a v1.0 Message that has also passed the v1.0 checks. */
export function fromV03Message(m: unknown, where = "params.message"): Message {
  if (!isObj(m)) throw bad(`${where} is required and must be an object`);
  checkKind(m, "message", where);
  const messageId = nonEmptyString(m, "messageId", where);
  if (m.role !== "user" && m.role !== "agent") throw bad(`${where}.role must be "user" or "agent"`);
  if (!Array.isArray(m.parts) || m.parts.length === 0) throw bad(`${where}.parts must be a non-empty array`);
  const parts = m.parts.map((p, i) => fromV03Part(p, `${where}.parts[${i}]`));
  const metadata = optObject(m, "metadata", where);
  const out = compact<Message>({
    messageId,
    role: m.role === "user" ? "ROLE_USER" : "ROLE_AGENT",
    parts,
    contextId: nonEmpty(optString(m, "contextId", where)),
    taskId: nonEmpty(optString(m, "taskId", where)),
    metadata: metadata && { ...metadata },
    extensions: nonEmptyList(optStringArray(m, "extensions", where)),
    referenceTaskIds: nonEmptyList(optStringArray(m, "referenceTaskIds", where)),
  });
  return validate.message(out, where);
}

export function toV03Artifact(a: Artifact): V03Artifact {
  return compact<V03Artifact>({
    artifactId: a.artifactId,
    name: nonEmpty(a.name),
    description: nonEmpty(a.description),
    parts: a.parts.map(toV03Part),
    metadata: a.metadata && { ...a.metadata },
    extensions: nonEmptyList(a.extensions),
  });
}

export function fromV03Artifact(a: unknown, where = "artifact"): Artifact {
  if (!isObj(a)) throw bad(`${where} must be an object`);
  const artifactId = nonEmptyString(a, "artifactId", where);
  if (!Array.isArray(a.parts)) throw bad(`${where}.parts must be an array`);
  const metadata = optObject(a, "metadata", where);
  return compact<Artifact>({
    artifactId,
    name: nonEmpty(optString(a, "name", where)),
    description: nonEmpty(optString(a, "description", where)),
    parts: a.parts.map((p, i) => fromV03Part(p, `${where}.parts[${i}]`)),
    metadata: metadata && { ...metadata },
    extensions: nonEmptyList(optStringArray(a, "extensions", where)),
  });
}

export function toV03TaskStatus(s: TaskStatus): V03TaskStatus {
  return compact<V03TaskStatus>({
    state: toV03State(s.state),
    message: s.message && toV03Message(s.message),
    timestamp: nonEmpty(s.timestamp),
  });
}

export function fromV03TaskStatus(s: unknown, where = "status"): TaskStatus {
  if (!isObj(s)) throw bad(`${where} must be an object`);
  return compact<TaskStatus>({
    state: fromV03State(s.state, `${where}.state`),
    message: absent(s.message) ? undefined : fromV03Message(s.message, `${where}.message`),
    timestamp: nonEmpty(optString(s, "timestamp", where)),
  });
}

export function toV03Task(t: Task): V03Task {
  return compact<V03Task>({
    kind: "task",
    id: t.id,
    contextId: t.contextId,
    status: toV03TaskStatus(t.status),
    history: t.history && t.history.length > 0 ? t.history.map(toV03Message) : undefined,
    artifacts: t.artifacts && t.artifacts.length > 0 ? t.artifacts.map(toV03Artifact) : undefined,
    metadata: t.metadata && { ...t.metadata },
  });
}

export function fromV03Task(t: unknown, where = "task"): Task {
  if (!isObj(t)) throw bad(`${where} must be an object`);
  checkKind(t, "task", where);
  const id = nonEmptyString(t, "id", where);
  const contextId = nonEmptyString(t, "contextId", where);
  if (!absent(t.history) && !Array.isArray(t.history)) throw bad(`${where}.history must be an array`);
  if (!absent(t.artifacts) && !Array.isArray(t.artifacts)) throw bad(`${where}.artifacts must be an array`);
  const history = (t.history as unknown[] | undefined) ?? [];
  const artifacts = (t.artifacts as unknown[] | undefined) ?? [];
  const metadata = optObject(t, "metadata", where);
  return compact<Task>({
    id,
    contextId,
    status: fromV03TaskStatus(t.status, `${where}.status`),
    history: history.length > 0 ? history.map((m, i) => fromV03Message(m, `${where}.history[${i}]`)) : undefined,
    artifacts:
      artifacts.length > 0 ? artifacts.map((a, i) => fromV03Artifact(a, `${where}.artifacts[${i}]`)) : undefined,
    metadata: metadata && { ...metadata },
  });
}
