import type { SQL } from "bun";
import type { Message } from "../../protocol/types";
import { newId } from "../../clock";
import type { ReplicaMessages } from "../../tasks/replica-messages";
import { RelayedRefusal, TaskStoreError } from "../../tasks/task-store";
import { toJson } from "../pending-writes";
import { deferred, type Deferred } from "../../deferred";
import type { PostgresLeases } from "./postgres-leases";

type SQLListen = Awaited<ReturnType<SQL["listen"]>>;

/** The channel every commit that adds events notifies, with "taskId seq" lines (see watch). */
export const EVENTS_CHANNEL = "a2a_task_events";
/** Cancel requests between replicas: JSON {taskId, reason} (see requestCancel). */
export const CANCEL_CHANNEL = "a2a_task_cancel";
/** Answers passed between replicas, and the replies (see requestAnswer). */
export const ANSWER_CHANNEL = "a2a_task_answer";
export const ANSWER_REPLY_CHANNEL = "a2a_task_answer_reply";
/** How long an answer waits for the replica where its task waits (a live one takes it at once). */
const ANSWER_TIMEOUT_MS = 10_000;

/**
 * ReplicaMessages on the shared Postgres database, by LISTEN/NOTIFY on a connection of its own: commits of
 * events (PostgresTaskStore NOTIFYs EVENTS_CHANNEL in each commit that adds events), cancel requests (kept
 * with the task's lease too, see requestCancel) and answers passed by reference (a row of task_answers).
 */
export class PostgresReplicaMessages implements ReplicaMessages {
  private readonly sql: SQL;
  /** Task id → who follows it from the store (see watch). */
  private readonly watchers = new Map<string, Set<() => void>>();
  private feed: SQLListen | undefined;
  private cancels: SQLListen | undefined;
  private cancelListener: ((taskId: string, reason: string) => void) | undefined;
  private answers: SQLListen[] = [];
  private answerTaker:
    ((taskId: string, owner: string, message: Message) => Promise<{ lastSeq: number }> | undefined) | undefined;
  private waitsHere: ((taskId: string) => boolean) | undefined;
  /** Answers this replica passed on, waiting for a reply, by request id. */
  private readonly awaitingReply = new Map<string, Deferred<{ lastSeq: number }>>();

  constructor(
    sql: SQL,
    /** This replica's leases: a cancel request is kept with the task's lease (see requestCancel). */
    private readonly leases?: PostgresLeases,
  ) {
    this.sql = sql;
  }

  /**
   * Listens to EVENTS_CHANNEL on a connection of its own, so watch() hears of every replica's commits. After a
   * lost connection the listen is made again and every watcher is told, since notices may have been missed.
   */
  async listen(): Promise<void> {
    if (this.feed) return;
    let first = true;
    this.feed = await this.sql.listen(
      EVENTS_CHANNEL,
      (payload) => {
        for (const line of payload.split("\n")) {
          const id = line.slice(0, line.lastIndexOf(" "));
          for (const w of this.watchers.get(id) ?? []) w();
        }
      },
      () => {
        if (first) first = false;
        else for (const set of this.watchers.values()) for (const w of set) w();
      },
    );
    this.cancels = await this.sql.listen(CANCEL_CHANNEL, (payload) => {
      try {
        const { taskId, reason } = JSON.parse(payload) as { taskId: string; reason: string };
        this.cancelListener?.(taskId, reason);
      } catch {
        // Not one of ours: ignored.
      }
    });
    this.answers = [
      await this.sql.listen(ANSWER_CHANNEL, (p) => void this.takeAnswer(p)),
      await this.sql.listen(ANSWER_REPLY_CHANNEL, (p) => this.takeReply(p)),
    ];
  }

  /**
   * The answer goes by reference: its row in task_answers, and a NOTIFY of the row's id (with the task and
   * owner, so only the replica where the task waits reads it), in one statement. Any answer the node took from
   * its caller fits, whatever NOTIFY's payload limit. The row is deleted once answered or given up on.
   */
  async requestAnswer(taskId: string, owner: string, message: Message): Promise<{ lastSeq: number }> {
    const id = newId();
    const body = toJson(message, "message");
    const payload = JSON.stringify({ id, taskId, owner });
    const reply = deferred<{ lastSeq: number }>();
    this.awaitingReply.set(id, reply);
    const timer = setTimeout(
      () =>
        reply.reject(
          new TaskStoreError(
            `no replica took the answer to task ${taskId} within ${ANSWER_TIMEOUT_MS / 1000} s (the one where it waits may have stopped); send it again`,
          ),
        ),
      ANSWER_TIMEOUT_MS,
    );
    try {
      await this
        .sql`WITH stored AS (INSERT INTO task_answers (id, task_id, owner, message) VALUES (${id}, ${taskId}, ${owner}, ${body}) RETURNING id)
        SELECT pg_notify(${ANSWER_CHANNEL}, ${payload}) FROM stored`;
      return await reply.promise;
    } finally {
      clearTimeout(timer);
      this.awaitingReply.delete(id);
      // left over, it is harmless (retention removes it)
      await this.sql`DELETE FROM task_answers WHERE id = ${id}`.catch(() => {});
    }
  }

  onAnswerRequest(
    take: (taskId: string, owner: string, message: Message) => Promise<{ lastSeq: number }> | undefined,
    waitsHere?: (taskId: string) => boolean,
  ): void {
    this.answerTaker = take;
    this.waitsHere = waitsHere;
  }

  /**
   * An answer another replica passed on: read from task_answers and taken here if its task waits here, and
   * the outcome sent back. Only a replica whose runner holds the task (asked with `waitsHere`) reads the row.
   */
  private async takeAnswer(payload: string): Promise<void> {
    let request: { id: string; taskId: string; owner: string };
    try {
      request = JSON.parse(payload);
    } catch {
      return;
    }
    if (this.waitsHere && !this.waitsHere(request.taskId)) return;
    let taken: Promise<{ lastSeq: number }> | undefined;
    try {
      const [row] = (await this
        .sql`SELECT message FROM task_answers WHERE id = ${request.id} AND task_id = ${request.taskId} AND owner = ${request.owner}`) as {
        message: string;
      }[];
      if (!row) return; // given up on already
      taken = this.answerTaker?.(request.taskId, request.owner, JSON.parse(row.message) as Message);
    } catch (err) {
      taken = Promise.reject(err);
    }
    if (!taken) return; // not waiting here
    const reply = (body: Record<string, unknown>) =>
      this.sql`SELECT pg_notify(${ANSWER_REPLY_CHANNEL}, ${JSON.stringify({ id: request.id, ...body })})`.catch(
        () => {},
      );
    taken.then(
      ({ lastSeq }) => void reply({ lastSeq }),
      (err: { code?: number; reason?: string; message?: string }) =>
        void reply({
          error: {
            code: typeof err?.code === "number" ? err.code : -32603,
            message: err?.message ?? String(err),
            reason: err?.reason ?? "INTERNAL_ERROR",
          },
        }),
    );
  }

  private takeReply(payload: string): void {
    let r: { id: string; lastSeq?: number; error?: { code: number; message: string; reason: string } };
    try {
      r = JSON.parse(payload);
    } catch {
      return;
    }
    const waiting = this.awaitingReply.get(r.id);
    if (!waiting) return; // another replica's
    if (r.error) waiting.reject(new RelayedRefusal(r.error.code, r.error.message, r.error.reason));
    else waiting.resolve({ lastSeq: r.lastSeq ?? 0 });
  }

  /**
   * Stored with the task's lease first (see PostgresLeases.requestCancel), where its holder reads it at its
   * next renewal whatever happens to the NOTIFY (a replica that was reconnecting, or one that takes the task
   * over); the NOTIFY is the fast path.
   */
  async requestCancel(taskId: string, reason: string): Promise<void> {
    const payload = JSON.stringify({ taskId, reason });
    if (this.leases)
      await this
        .sql`WITH kept AS (UPDATE task_leases SET cancel_reason = ${reason} WHERE task_id = ${taskId} RETURNING task_id)
        SELECT pg_notify(${CANCEL_CHANNEL}, ${payload}), (SELECT count(*) FROM kept)`;
    else await this.sql`SELECT pg_notify(${CANCEL_CHANNEL}, ${payload})`;
  }

  onCancelRequest(listener: (taskId: string, reason: string) => void): void {
    this.cancelListener = listener;
    this.leases?.onCancelRequested(listener);
  }

  /** Stops listening (before closing the database). */
  async unlisten(): Promise<void> {
    const [feed, cancels, answers] = [this.feed, this.cancels, this.answers];
    this.feed = this.cancels = undefined;
    this.answers = [];
    await Promise.all([feed?.unlisten(), cancels?.unlisten(), ...answers.map((a) => a.unlisten())]);
  }

  watch(taskId: string, onCommitted: () => void): () => void {
    if (!this.feed) throw new Error("the Postgres replica messages are not listening: call listen() first");
    let set = this.watchers.get(taskId);
    if (!set) this.watchers.set(taskId, (set = new Set()));
    const w = () => onCommitted();
    set.add(w);
    return () => {
      set.delete(w);
      if (set.size === 0 && this.watchers.get(taskId) === set) this.watchers.delete(taskId);
    };
  }
}
