import type { Message } from "../protocol/types";

/**
 * What the processes sharing one store (replicas on one database) tell each other, apart from what they store:
 * that a task's events were committed, that a task running elsewhere is to be canceled, and the answer to a
 * task waiting for input in another process. Only a shared store has it (Postgres: LISTEN/NOTIFY); a node that
 * is one process alone has nobody to tell, and the callers take their in-process path where it is absent.
 */
export interface ReplicaMessages {
  /**
   * Calls `onCommitted` whenever any process may have committed events of the task (and again after a lost
   * connection, when some notices may have been missed); the caller reads them with TaskStore.eventsAfter.
   * Returns a function that stops it.
   */
  watch(taskId: string, onCommitted: () => void): () => void;
  /**
   * Asks whichever process runs the task to cancel it (see onCancelRequest). The request is kept for the
   * task's holder until the task ends or is let go, so a process that missed the notice hears it later.
   */
  requestCancel(taskId: string, reason: string): Promise<void>;
  /** Hears the cancel requests of every process (for the tasks it may run). */
  onCancelRequest(listener: (taskId: string, reason: string) => void): void;
  /**
   * Passes the answer to a task waiting for input to the process where its execution waits; resolves once that
   * one has stored it, with the number of the task's last event before it. Rejects with RelayedRefusal when
   * that process refuses it, or a TaskStoreError when no process took it.
   */
  requestAnswer(taskId: string, owner: string, message: Message): Promise<{ lastSeq: number }>;
  /**
   * Hears the answers other processes pass on; `take` returns undefined for a task that does not wait here
   * (another process may take it), else resolves once the answer is stored. `waitsHere`, if given, says
   * beforehand whether a task waits here, so an implementation that passes answers by reference reads only
   * those it may take.
   */
  onAnswerRequest(
    take: (taskId: string, owner: string, message: Message) => Promise<{ lastSeq: number }> | undefined,
    waitsHere?: (taskId: string) => boolean,
  ): void;
}
