import { isObj, bad, absent, optInt, optBool, optObject, optStringArray } from "../field-checks";
import type { SendMessageConfiguration, SendMessageParams } from "../types";
import { fromV03Message } from "./messages";
import { fromV03PushNotificationConfig } from "./push-configs";

/* message/send params from v0.3. */

/**
 * The v0.3 `blocking` flag as v1.0 `returnImmediately`, exactly as `@a2a-js/sdk` 1.3.0 maps it
 * (dist/compat/v0_3/server/index.js:1074, toCoreSendMessageConfiguration:
 * `returnImmediately: compat.blocking === void 0 ? true : !compat.blocking`): with a `configuration` object,
 * an unset `blocking` means return immediately; with no `configuration` at all the v1.0 default applies
 * (blocking), since the SDK then passes no configuration (dist/server/index.js:3078:
 * `isBlocking = params.configuration?.returnImmediately !== true`).
 */
export function v03ReturnImmediately(blocking: boolean | undefined): boolean {
  return blocking === undefined ? true : !blocking;
}

/** v0.3 MessageSendParams `{message, configuration?, metadata?}` as v1.0 SendMessageParams. */
export function fromV03SendParams(p: unknown): SendMessageParams {
  if (!isObj(p)) throw bad("params must be an object");
  const out: SendMessageParams = { message: fromV03Message(p.message, "params.message") };
  if (!absent(p.configuration)) {
    const c = p.configuration;
    const where = "params.configuration";
    if (!isObj(c)) throw bad(`${where} must be an object`);
    const cfg: SendMessageConfiguration = {
      returnImmediately: v03ReturnImmediately(optBool(c, "blocking", where)),
    };
    const modes = optStringArray(c, "acceptedOutputModes", where);
    if (modes) cfg.acceptedOutputModes = [...modes];
    const historyLength = optInt(c, "historyLength", where, 0);
    if (historyLength !== undefined) cfg.historyLength = historyLength;
    if (!absent(c.pushNotificationConfig))
      // The task does not exist yet; the handler fills in its id.
      cfg.taskPushNotificationConfig = {
        ...fromV03PushNotificationConfig(c.pushNotificationConfig, `${where}.pushNotificationConfig`),
        taskId: "pending",
      };
    out.configuration = cfg;
  }
  const metadata = optObject(p, "metadata", "params");
  if (metadata) out.metadata = { ...metadata };
  return out;
}
