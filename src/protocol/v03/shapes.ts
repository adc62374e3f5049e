import type { AgentSkill } from "../types";

/* The A2A v0.3 wire shapes, as the `@a2a-js/sdk` 1.3.0 compat layer has them (dist/compat/v0_3). */

export type V03TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected"
  | "auth-required"
  | "unknown";

export type Metadata = Record<string, unknown>;

export interface V03TextPart {
  kind: "text";
  text: string;
  metadata?: Metadata;
}
export interface V03FileWithBytes {
  bytes: string;
  name?: string;
  mimeType?: string;
}
export interface V03FileWithUri {
  uri: string;
  name?: string;
  mimeType?: string;
}
export interface V03FilePart {
  kind: "file";
  file: V03FileWithBytes | V03FileWithUri;
  metadata?: Metadata;
}
export interface V03DataPart {
  kind: "data";
  data: Metadata;
  metadata?: Metadata;
}
export type V03Part = V03TextPart | V03FilePart | V03DataPart;

export interface V03Message {
  kind: "message";
  messageId: string;
  role: "user" | "agent";
  parts: V03Part[];
  contextId?: string;
  taskId?: string;
  metadata?: Metadata;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface V03TaskStatus {
  state: V03TaskState;
  message?: V03Message;
  timestamp?: string;
}

export interface V03Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: V03Part[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface V03Task {
  kind: "task";
  id: string;
  contextId: string;
  status: V03TaskStatus;
  history?: V03Message[];
  artifacts?: V03Artifact[];
  metadata?: Metadata;
}

export interface V03TaskStatusUpdateEvent {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: V03TaskStatus;
  /** True on the last event of a stream: the task reached a terminal or interrupted state. */
  final: boolean;
  metadata?: Metadata;
}

export interface V03TaskArtifactUpdateEvent {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: V03Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
}

/** One result of `message/stream` / `tasks/resubscribe`. */
export type V03Event = V03Task | V03Message | V03TaskStatusUpdateEvent | V03TaskArtifactUpdateEvent;

export interface V03PushNotificationAuthenticationInfo {
  schemes: string[];
  credentials?: string;
}
export interface V03PushNotificationConfig {
  id?: string;
  url: string;
  token?: string;
  authentication?: V03PushNotificationAuthenticationInfo;
}
export interface V03TaskPushNotificationConfig {
  taskId: string;
  pushNotificationConfig: V03PushNotificationConfig;
}

export interface V03AgentCard {
  name: string;
  description: string;
  version: string;
  protocolVersion: string;
  url: string;
  preferredTransport: string;
  additionalInterfaces?: { url: string; transport: string }[];
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  capabilities: { streaming?: boolean; pushNotifications?: boolean; extensions?: unknown[] };
  securitySchemes?: Record<string, Metadata>;
  security?: Record<string, string[]>[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[]; // unchanged between v0.3 and v1.0
  supportsAuthenticatedExtendedCard?: boolean;
}
