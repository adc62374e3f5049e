import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../protocol/types";
import {
  ConfigOwnedElsewhere,
  overPushLimits,
  redactConfig,
  type PushConfigLimits,
  type PushConfigStore,
  type StoredPushConfig,
} from "../push/push-config-store";
import { savedConfig } from "./push-config-rows";
import { configPage, configPageSize, decodeConfigPageToken } from "./page-token";

/**
 * PushConfigStore in memory, for unit tests and as the plainest reading of its contract
 * (test/push/push-config-store-contract.ts). Values are copied in and out; nothing survives the process.
 */
export class MemoryPushConfigStore implements PushConfigStore {
  /** taskId → config id → config. */
  private readonly byTask = new Map<string, Map<string, StoredPushConfig>>();

  async create(
    owner: string,
    config: TaskPushNotificationConfig,
    limits?: PushConfigLimits,
  ): Promise<TaskPushNotificationConfig> {
    const saved = savedConfig(config);
    let configs = this.byTask.get(saved.taskId);
    const existing = configs?.get(saved.id);
    if (existing && existing.owner !== owner) throw new ConfigOwnedElsewhere(saved.taskId);
    if (!existing) {
      let forCaller = 0;
      for (const byId of this.byTask.values()) for (const c of byId.values()) if (c.owner === owner) forCaller++;
      const over = overPushLimits(limits, configs?.size ?? 0, forCaller);
      if (over) throw over;
    }
    if (!configs) this.byTask.set(saved.taskId, (configs = new Map()));
    configs.set(saved.id, { ...structuredClone(saved), owner });
    return saved;
  }

  async countForOwner(owner: string): Promise<number> {
    let n = 0;
    for (const byId of this.byTask.values()) for (const c of byId.values()) if (c.owner === owner) n++;
    return n;
  }

  async get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined> {
    const c = this.byTask.get(taskId)?.get(id);
    return c && c.owner === owner ? withoutOwner(c) : undefined;
  }

  async list(
    owner: string,
    taskId: string,
    pageSize?: number,
    pageToken?: string,
  ): Promise<ListTaskPushNotificationConfigsResult> {
    const size = configPageSize(pageSize);
    const after = pageToken ? decodeConfigPageToken(pageToken) : undefined;
    const mine = [...(this.byTask.get(taskId)?.values() ?? [])]
      .filter((c) => c.owner === owner && (after === undefined || c.id > after))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    return configPage(mine, size, withoutOwner);
  }

  async delete(owner: string, taskId: string, id: string): Promise<boolean> {
    const configs = this.byTask.get(taskId);
    if (configs?.get(id)?.owner !== owner) return false;
    configs.delete(id);
    if (configs.size === 0) this.byTask.delete(taskId);
    return true;
  }

  async deleteForTasks(taskIds: readonly string[]): Promise<void> {
    for (const id of taskIds) this.byTask.delete(id);
  }

  async forTask(taskId: string): Promise<StoredPushConfig[]> {
    return [...(this.byTask.get(taskId)?.values() ?? [])]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((c) => structuredClone(c));
  }

  async forDelivery(taskId: string, id: string): Promise<StoredPushConfig | undefined> {
    const c = this.byTask.get(taskId)?.get(id);
    return c && structuredClone(c);
  }
}

function withoutOwner(c: StoredPushConfig): TaskPushNotificationConfig {
  const { owner: _owner, ...config } = structuredClone(c);
  return redactConfig(config);
}
