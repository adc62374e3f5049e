/**
 * The DeliveryQueue contract (see src/push/delivery-queue.ts), one suite for every implementation, run by
 * delivery-queue.contract.test.ts. What one implementation does beyond it (Postgres's claims between
 * replicas) is tested beside it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DeliveryQueue, QueuedDelivery } from "../../src/push/delivery-queue";

export interface OpenedQueue {
  queue: DeliveryQueue;
  close(): Promise<void> | void;
}

const at = "2030-01-01T00:00:00.000Z";
const row = (id: string, task = "t1", config = "c1"): Omit<QueuedDelivery, "attempts"> => ({
  id,
  task_id: task,
  config_id: config,
  body: `{"n":"${id}"}`,
  next_attempt_at: at,
});

export function deliveryQueueContract(name: string, open: () => Promise<OpenedQueue> | OpenedQueue): void {
  describe(`DeliveryQueue contract: ${name}`, () => {
    let opened: OpenedQueue;
    let queue: DeliveryQueue;
    beforeEach(async () => {
      opened = await open();
      queue = opened.queue;
    });
    afterEach(async () => {
      await opened.close();
    });

    it("keeps what was added, durable once add resolves: load returns it oldest first without bodies, get with its body", async () => {
      await queue.add([row("02"), row("01"), row("03", "t2", "c9")]);
      expect(await queue.load()).toEqual([
        { id: "01", task_id: "t1", config_id: "c1", attempts: 0, next_attempt_at: at },
        { id: "02", task_id: "t1", config_id: "c1", attempts: 0, next_attempt_at: at },
        { id: "03", task_id: "t2", config_id: "c9", attempts: 0, next_attempt_at: at },
      ]);
      expect(await queue.get("02")).toEqual({
        id: "02",
        task_id: "t1",
        config_id: "c1",
        body: '{"n":"02"}',
        attempts: 0,
        next_attempt_at: at,
      });
      expect(await queue.get("nosuch")).toBeUndefined();
      await queue.add([]); // nothing to add is no error
    });

    it("records a retry (attempts and next time) and forgets a delivery removed", async () => {
      await queue.add([row("01"), row("02")]);
      await queue.retry("01", 3, "2030-01-02T00:00:00.000Z", "HTTP 503");
      expect(await queue.get("01")).toMatchObject({ attempts: 3, next_attempt_at: "2030-01-02T00:00:00.000Z" });
      await queue.remove("02");
      expect(await queue.get("02")).toBeUndefined();
      expect((await queue.load()).map((d) => d.id)).toEqual(["01"]);
      await queue.remove("02"); // removed twice: no error
    });

    it("drops one webhook's lane of a task and says how many, leaving the other lanes", async () => {
      await queue.add([row("01", "t1", "c1"), row("02", "t1", "c2"), row("03", "t1", "c1"), row("04", "t2", "c1")]);
      expect(await queue.dropLane("t1", "c1")).toBe(2);
      expect(await queue.dropLane("t1", "c1")).toBe(0);
      expect((await queue.load()).map((d) => d.id)).toEqual(["02", "04"]);
    });

    it("renews its claims when it has them, with a period to do so", async () => {
      if (!queue.renew) return expect(queue.renewEveryMs).toBeUndefined();
      expect(queue.renewEveryMs).toBeGreaterThan(0);
      await queue.add([row("01")]);
      await queue.renew();
      expect((await queue.load()).map((d) => d.id)).toEqual(["01"]);
    });
  });
}
