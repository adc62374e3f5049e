/**
 * Pure conversions between a2a-node's v1.0 shapes and the A2A v0.3 wire shapes (the JSON-RPC flavour spoken by
 * peers that send no A2A-Version header), plus the pre-0.2 Hermes `tasks/send` record.
 * Each kind of shape has its module here (shapes, states, parts, messages, events, push-configs, send-params,
 * agent-card, legacy); this one gathers them. The v0.3 shapes follow
 * the `@a2a-js/sdk` 1.3.0 compat layer (dist/compat/v0_3): `kind` discriminators, lowercase states, `file` parts.
 *
 * `fromV03*` take what a client sent (unknown JSON) and throw -32602 InvalidParams naming the exact field;
 * `toV03*` take our own, already valid, v1.0 objects.
 */
export {
  type V03TaskState,
  type V03TextPart,
  type V03FileWithBytes,
  type V03FileWithUri,
  type V03FilePart,
  type V03DataPart,
  type V03Part,
  type V03Message,
  type V03TaskStatus,
  type V03Artifact,
  type V03Task,
  type V03TaskStatusUpdateEvent,
  type V03TaskArtifactUpdateEvent,
  type V03Event,
  type V03PushNotificationAuthenticationInfo,
  type V03PushNotificationConfig,
  type V03TaskPushNotificationConfig,
  type V03AgentCard,
} from "./shapes";
export { toV03State, fromV03State } from "./states";
export { DATA_PART_COMPAT_FLAG, toV03Part, fromV03Part } from "./parts";
export {
  toV03Message,
  fromV03Message,
  toV03Artifact,
  fromV03Artifact,
  toV03TaskStatus,
  fromV03TaskStatus,
  toV03Task,
  fromV03Task,
} from "./messages";
export {
  toV03StatusUpdate,
  fromV03StatusUpdate,
  toV03ArtifactUpdate,
  fromV03ArtifactUpdate,
  toV03Event,
  toV03SendResult,
} from "./events";
export { type PushConfigBody, toV03PushConfig, fromV03PushNotificationConfig, fromV03PushConfig } from "./push-configs";
export { v03ReturnImmediately, fromV03SendParams } from "./send-params";
export { V03_PROTOCOL_VERSION, toV03AgentCard } from "./agent-card";
export {
  type LegacySendParams,
  type LegacyTaskRecord,
  LEGACY_METADATA_KEY,
  legacySendParams,
  legacyToSendParams,
  toLegacyRecord,
  legacyRecordFromMessage,
} from "./legacy";
