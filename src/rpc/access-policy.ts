import type { Message } from "../protocol/types";

/**
 * The A2A v1.0 operations, by the names the policy uses (their JSON-RPC method names). A v0.3 call
 * (message/send, tasks/get, ...) and a legacy Hermes one are judged as the v1.0 operation it runs.
 */
export const A2A_METHODS = [
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "ListTasks",
  "CancelTask",
  "SubscribeToTask",
  "CreateTaskPushNotificationConfig",
  "GetTaskPushNotificationConfig",
  "ListTaskPushNotificationConfigs",
  "DeleteTaskPushNotificationConfig",
  "GetExtendedAgentCard",
] as const;

export type A2AMethod = (typeof A2A_METHODS)[number];

/** The operations that carry a message, and so a skill. */
const SENDS_MESSAGE = new Set<string>(["SendMessage", "SendStreamingMessage"]);

/**
 * One [[authorize]] table: the peers (fleet names, the CN of their certificates; "*" for any fleet member) it
 * lets make the calls named in `methods` ("*": all). With `skills`, a message (SendMessage,
 * SendStreamingMessage) is let through only if it names one of them in message.metadata.skill, the field the
 * executor picks its skill by; a message naming none is then not let through by this rule.
 */
export interface AccessRule {
  peers: string[];
  methods: string[];
  skills?: string[];
}

/**
 * Whether `rules` let `peer` call `method` (with the message's `skill`). No rules at all: everything, as
 * before there was a policy. Otherwise the first rule that lets the call through decides; none: refused.
 */
export function allows(rules: readonly AccessRule[], peer: string, method: string, skill: string | undefined): boolean {
  if (rules.length === 0) return true;
  return rules.some(
    (r) =>
      (r.peers.includes("*") || r.peers.includes(peer)) &&
      (r.methods.includes("*") || r.methods.includes(method)) &&
      (!SENDS_MESSAGE.has(method) ||
        r.skills === undefined ||
        r.skills.includes("*") ||
        (skill !== undefined && r.skills.includes(skill))),
  );
}

/** The skill a message asks for (message.metadata.skill), as the executors read it. */
export function skillOf(message: Message): string | undefined {
  const s = message.metadata?.skill;
  return typeof s === "string" && s !== "" ? s : undefined;
}
