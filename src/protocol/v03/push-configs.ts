import { isObj, bad, absent, optString, nonEmptyString, optStringArray } from "../field-checks";
import type { TaskPushNotificationConfig } from "../types";
import type { V03PushNotificationConfig, V03TaskPushNotificationConfig } from "./shapes";
import { httpUrl, compact, nonEmpty } from "./wire-checks";

/* Push notification configs between v1.0 and v0.3. */

/** A v1.0 push config without the task it belongs to (as inside SendMessageConfiguration). */
export type PushConfigBody = Omit<TaskPushNotificationConfig, "taskId">;

export function toV03PushConfig(c: TaskPushNotificationConfig): V03TaskPushNotificationConfig {
  const inner: V03PushNotificationConfig = { url: c.url };
  if (nonEmpty(c.id)) inner.id = c.id;
  if (nonEmpty(c.token)) inner.token = c.token;
  if (c.authentication) {
    inner.authentication = { schemes: c.authentication.scheme ? [c.authentication.scheme] : [] };
    if (nonEmpty(c.authentication.credentials)) inner.authentication.credentials = c.authentication.credentials;
  }
  return { taskId: c.taskId, pushNotificationConfig: inner };
}

/**
 * A v0.3 PushNotificationConfig (`{id?, url, token?, authentication?: {schemes, credentials?}}`). v1.0 keeps one
 * scheme: the first listed one is the one used, as in the SDK. A missing id is left "" for the handler to assign.
 */
export function fromV03PushNotificationConfig(c: unknown, where: string): PushConfigBody {
  if (!isObj(c)) throw bad(`${where} is required and must be an object`);
  const out: PushConfigBody = {
    id: optString(c, "id", where) ?? "",
    url: httpUrl(nonEmptyString(c, "url", where), `${where}.url`),
  };
  const token = optString(c, "token", where);
  if (token) out.token = token;
  if (!absent(c.authentication)) {
    const a = c.authentication;
    const aw = `${where}.authentication`;
    if (!isObj(a)) throw bad(`${aw} must be an object`);
    const schemes = optStringArray(a, "schemes", aw);
    if (!schemes || schemes.length === 0 || schemes[0] === "")
      throw bad(`${aw}.schemes must be a non-empty array of scheme names`);
    out.authentication = compact({ scheme: schemes[0], credentials: optString(a, "credentials", aw) });
  }
  return out;
}

/** `tasks/pushNotificationConfig/set` params: `{taskId, pushNotificationConfig}`. */
export function fromV03PushConfig(p: unknown, where = "params"): TaskPushNotificationConfig {
  if (!isObj(p)) throw bad(`${where} must be an object`);
  const taskId = nonEmptyString(p, "taskId", where);
  const body = fromV03PushNotificationConfig(p.pushNotificationConfig, `${where}.pushNotificationConfig`);
  return {
    id: body.id,
    taskId,
    url: body.url,
    ...(body.token ? { token: body.token } : {}),
    ...(body.authentication ? { authentication: body.authentication } : {}),
  };
}
