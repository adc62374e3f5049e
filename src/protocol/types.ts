/**
 * A2A v1.0 data shapes (ProtoJSON of a2a.proto: camelCase fields, enum values as strings, timestamps as
 * ISO-8601 UTC). Only what a2a-node reads or writes is modelled; unknown fields from peers are ignored.
 */

export type TaskState =
  | "TASK_STATE_SUBMITTED"
  | "TASK_STATE_WORKING"
  | "TASK_STATE_INPUT_REQUIRED"
  | "TASK_STATE_AUTH_REQUIRED"
  | "TASK_STATE_COMPLETED"
  | "TASK_STATE_CANCELED"
  | "TASK_STATE_FAILED"
  | "TASK_STATE_REJECTED";

export const TASK_STATES: readonly TaskState[] = [
  "TASK_STATE_SUBMITTED",
  "TASK_STATE_WORKING",
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_AUTH_REQUIRED",
  "TASK_STATE_COMPLETED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_FAILED",
  "TASK_STATE_REJECTED",
];

const TERMINAL = new Set<TaskState>([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_FAILED",
  "TASK_STATE_REJECTED",
]);
const INTERRUPTED = new Set<TaskState>(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);

export const isTerminal = (s: TaskState): boolean => TERMINAL.has(s);
export const isInterrupted = (s: TaskState): boolean => INTERRUPTED.has(s);
/** A blocking SendMessage returns, and a stream closes, once a task reaches one of these. */
export const isSettled = (s: TaskState): boolean => TERMINAL.has(s) || INTERRUPTED.has(s);

export type Role = "ROLE_USER" | "ROLE_AGENT";

/** Exactly one of text, raw (base64), url or data is set. */
export interface Part {
  text?: string;
  raw?: string;
  url?: string;
  data?: unknown;
  filename?: string;
  mediaType?: string;
  metadata?: Record<string, unknown>;
}

export interface Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: Role;
  parts: Part[];
  metadata?: Record<string, unknown>;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  /** ISO-8601 UTC with millisecond precision. */
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Record<string, unknown>;
  extensions?: string[];
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Record<string, unknown>;
}

export interface TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: Record<string, unknown>;
}

export interface TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Record<string, unknown>;
}

export interface SendMessageConfiguration {
  acceptedOutputModes?: string[];
  historyLength?: number;
  returnImmediately?: boolean;
  taskPushNotificationConfig?: TaskPushNotificationConfig;
}

export interface SendMessageParams {
  message: Message;
  configuration?: SendMessageConfiguration;
  metadata?: Record<string, unknown>;
}

export type SendMessageResult = { task: Task } | { message: Message };

export interface GetTaskParams {
  id: string;
  historyLength?: number;
}

export interface ListTasksParams {
  contextId?: string;
  status?: TaskState;
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: string;
  includeArtifacts?: boolean;
}

export interface ListTasksResult {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

export interface CancelTaskParams {
  id: string;
}

export interface AgentInterface {
  url: string;
  protocolBinding: "JSONRPC" | "HTTP+JSON" | "GRPC";
  protocolVersion: string;
  tenant?: string;
}

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
}

export interface AgentCard {
  name: string;
  description: string;
  version: string;
  supportedInterfaces: AgentInterface[];
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  capabilities: {
    streaming?: boolean;
    pushNotifications?: boolean;
    extensions?: AgentExtension[];
    extendedAgentCard?: boolean;
  };
  securitySchemes?: Record<string, unknown>;
  securityRequirements?: unknown[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  /** JWS signatures of the card (A2A v1.0 AgentCardSignature); see card-signature.ts. */
  signatures?: AgentCardSignature[];
}

/** One JWS (RFC 7515, flattened JSON, detached payload) over the RFC 8785 canonical card without `signatures`. */
export interface AgentCardSignature {
  /** base64url of the protected header (JSON). */
  protected: string;
  /** base64url of the signature. */
  signature: string;
  /** Unprotected header members, if any. */
  header?: Record<string, unknown>;
}

/** An A2A extension the agent supports (AgentCard.capabilities.extensions). */
export interface AgentExtension {
  uri: string;
  description?: string;
  /** The client must request it (A2A-Extensions) in every message, or gets -32008. */
  required?: boolean;
  params?: Record<string, unknown>;
}

/** The protocol version this node speaks (a request's A2A-Version header, missing or empty, means 0.3). */
export const CURRENT_PROTOCOL_VERSION = "1.0";

/** One item of a stream (SendStreamingMessage, SubscribeToTask): exactly one of the four is set. */
export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

/** One item of a stream; `seq` is the task event's sequence number (absent for the opening Task/Message). */
export interface StreamItem {
  seq?: number;
  response: StreamResponse;
}

export interface SubscribeToTaskParams {
  id: string;
}

export interface AuthenticationInfo {
  /** e.g. "Bearer", "Basic"; sent as `Authorization: <scheme> <credentials>`. */
  scheme: string;
  credentials?: string;
}

/** A webhook registered for one task (v1.0 TaskPushNotificationConfig). */
export interface TaskPushNotificationConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: AuthenticationInfo;
}

export interface GetTaskPushNotificationConfigParams {
  taskId: string;
  id: string;
}

export interface ListTaskPushNotificationConfigsParams {
  taskId: string;
  pageSize?: number;
  pageToken?: string;
}

export interface ListTaskPushNotificationConfigsResult {
  configs: TaskPushNotificationConfig[];
  nextPageToken: string;
}
