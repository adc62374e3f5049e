import { nodeNameProblem } from "../../pki/names";
import { TOKEN_CALLER_PREFIX } from "../auth/caller-tokens";
import { A2A_METHODS, type AccessRule } from "../rpc/access-policy";
import { SettingProblem } from "./kinds";

const KNOWN = new Set(["peers", "methods", "skills"]);
const METHODS = new Set<string>(A2A_METHODS);

/** v0.3 method names a person may write from memory, and the v1.0 names the policy uses for them. */
const V03_NAMES: Record<string, string> = {
  "message/send": "SendMessage",
  "message/stream": "SendStreamingMessage",
  "tasks/get": "GetTask",
  "tasks/list": "ListTasks",
  "tasks/cancel": "CancelTask",
  "tasks/resubscribe": "SubscribeToTask",
  "tasks/send": "SendMessage",
  "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
  "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
  "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
  "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
  "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
};

/**
 * Reads the [[authorize]] tables of the config file: each lets `peers` make the calls in `methods`, and, if
 * it has `skills`, send messages only for those skills. Every mistake is named (an unknown method with the
 * list of known ones, a peer name no certificate can carry), since a policy that silently matches nothing
 * would refuse everyone.
 */
export function readAuthorization(v: unknown): AccessRule[] {
  if (!Array.isArray(v))
    throw new SettingProblem(
      "must be an array of [[authorize]] tables (each with peers, methods and optionally skills)",
    );
  return v.map((r, i) => {
    const at = `entry ${i + 1}:`;
    if (typeof r !== "object" || r === null || Array.isArray(r)) throw new SettingProblem(`${at} must be a table`);
    const o = r as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!KNOWN.has(k)) throw new SettingProblem(`${at} unknown key '${k}' (known: ${[...KNOWN].join(", ")})`);
    const strings = (f: string, required: boolean): string[] | undefined => {
      if (o[f] === undefined) {
        if (required) throw new SettingProblem(`${at} ${f} is missing: list them, or write ["*"] for all`);
        return undefined;
      }
      const list = o[f];
      if (!Array.isArray(list) || list.length === 0 || list.some((t) => typeof t !== "string" || t === ""))
        throw new SettingProblem(`${at} ${f} must be a non-empty list of non-empty strings (["*"] for all)`);
      return list as string[];
    };
    const peers = strings("peers", true) as string[];
    for (const p of peers) {
      if (p === "*") continue;
      // A caller of the token listener is named "token:NAME" (NAME as 'tokens add' took it).
      const token = p.startsWith(TOKEN_CALLER_PREFIX);
      const problem = nodeNameProblem(token ? p.slice(TOKEN_CALLER_PREFIX.length) : p);
      if (problem)
        throw new SettingProblem(`${at} peer '${p}' is not a fleet name${token ? " after 'token:'" : ""}: ${problem}`);
    }
    const methods = strings("methods", true) as string[];
    for (const m of methods) {
      if (m === "*" || METHODS.has(m)) continue;
      const v1 = V03_NAMES[m];
      throw new SettingProblem(
        v1
          ? `${at} method '${m}' is a v0.3 name; write '${v1}' (a v0.3 call is judged as the v1.0 operation it runs)`
          : `${at} unknown method '${m}' (known: ${A2A_METHODS.join(", ")}, or "*")`,
      );
    }
    const skills = strings("skills", false);
    return skills === undefined ? { peers, methods } : { peers, methods, skills };
  });
}
