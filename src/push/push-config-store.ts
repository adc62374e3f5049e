import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../protocol/types";
import { TaskStoreError } from "../tasks/task-store";

/** Page sizes of `list`: the default, and the most one page holds (a larger pageSize is cut to it). */
export const PUSH_CONFIG_PAGE = { default: 50, max: 100 } as const;

/** A config as the dispatcher needs it: everything the caller set, plus who set it. */
export interface StoredPushConfig extends TaskPushNotificationConfig {
  owner: string;
}

/**
 * The webhooks callers registered for their tasks (A2A TaskPushNotificationConfig).
 *
 * Every client-facing method takes the owner (the caller's certificate CN) and treats another owner's config as
 * absent, the same way tasks are scoped. The store cannot see task ownership itself (a task may still be in the
 * task store's uncommitted group), so the request handler must check that the caller owns `taskId` before
 * `create`.
 *
 * Credentials are write-only: `get` and `list` return `authentication` with its scheme but without
 * `credentials` (redactConfig), as a2aproject/A2A#1681 (and its fix, PR #1750) asks of
 * GetTaskPushNotificationConfig and ListTaskPushNotificationConfigs: a config read back, logged by a client or
 * pasted into an agent's context must not carry a live secret. `create` answers with what it was given (the
 * caller sent it that instant). The `token` is still returned: it is the caller's own check value, which
 * receivers compare and sign with, and a2a-js returns it too. Only `forTask`/`forDelivery` (the dispatcher)
 * see the credentials. Nothing here is ever logged.
 *
 * Every method returns a promise (a store on a server answers over the network); errors are rejections.
 */
export interface PushConfigStore {
  /**
   * Saves the config; an empty id gets a ULID, and an existing (taskId, id) of the same owner is replaced.
   * With `limits`, a new config (not a replacement) that would pass either is refused with TooManyPushConfigs,
   * nothing saved: the count and the insert are one step, so callers racing each other cannot pass it.
   */
  create(
    owner: string,
    config: TaskPushNotificationConfig,
    limits?: PushConfigLimits,
  ): Promise<TaskPushNotificationConfig>;
  /** How many configs `owner` has, on all its tasks (what max_push_configs_per_caller counts). */
  countForOwner(owner: string): Promise<number>;
  get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined>;
  /**
   * Configs of one task ordered by id, `pageSize` (PUSH_CONFIG_PAGE) at most; `nextPageToken` is "" on the
   * last page.
   */
  list(
    owner: string,
    taskId: string,
    pageSize?: number,
    pageToken?: string,
  ): Promise<ListTaskPushNotificationConfigsResult>;
  /**
   * Removes the config; false if the caller has no such config. Deliveries still queued for it are dropped
   * (the SQLite store deletes them with it; any queue re-reads the config before sending, see forDelivery).
   */
  delete(owner: string, taskId: string, id: string): Promise<boolean>;
  /** Retention: forgets every config of these tasks (and deliveries queued for them), whoever set them. */
  deleteForTasks(taskIds: readonly string[]): Promise<void>;
  /** Every config of the task, whoever set it, with the secrets: for delivery only, never for a client. */
  forTask(taskId: string): Promise<StoredPushConfig[]>;
  /** One config for delivery (the dispatcher re-reads it before each attempt: it may have been deleted). */
  forDelivery(taskId: string, id: string): Promise<StoredPushConfig | undefined>;
}

/** The config as a client may read it back: `authentication.credentials` omitted, the scheme kept. */
export function redactConfig(config: TaskPushNotificationConfig): TaskPushNotificationConfig {
  if (!config.authentication) return config;
  const { credentials: _secret, ...rest } = config.authentication;
  return { ...config, authentication: rest };
}

/** Another owner holds the config with that (taskId, id): the caller is told no more than "not found". */
export class ConfigOwnedElsewhere extends TaskStoreError {
  constructor(readonly taskId: string) {
    super(`task ${taskId} has no such push notification config for this caller`);
    this.name = "ConfigOwnedElsewhere";
  }
}

/**
 * How many webhooks one task and one caller may have (max_push_configs_per_task, max_push_configs_per_caller):
 * every event of a task is POSTed to each of its configs, to hosts the caller chose, so without a bound one
 * message could make thousands of requests.
 */
export interface PushConfigLimits {
  perTask: number;
  perCaller: number;
}

/** A new config would pass one of the PushConfigLimits; `held` is how many the task or caller has. */
export class TooManyPushConfigs extends TaskStoreError {
  constructor(
    readonly limit: keyof PushConfigLimits,
    readonly held: number,
    readonly max: number,
  ) {
    super(
      limit === "perTask"
        ? `the task has ${held} push notification configs, this node's limit per task`
        : `the caller has ${held} push notification configs, this node's limit per caller`,
    );
    this.name = "TooManyPushConfigs";
  }
}

/** Whether one more config passes `limits`, given the task's and the caller's counts: the error if so. */
export function overPushLimits(
  limits: PushConfigLimits | undefined,
  forTask: number,
  forCaller: number,
): TooManyPushConfigs | undefined {
  if (!limits) return undefined;
  if (forTask >= limits.perTask) return new TooManyPushConfigs("perTask", forTask, limits.perTask);
  if (forCaller >= limits.perCaller) return new TooManyPushConfigs("perCaller", forCaller, limits.perCaller);
  return undefined;
}
