-- What the node and its executor keep about a task (a remote run's id, a pending approval, how often it was
-- resumed, the extensions its execution has), in a column of its own: the caller writes `metadata`, and nothing
-- it sends is read back as the node's own (see schema.ts).
ALTER TABLE "tasks" ADD COLUMN "node_state" text;
--> statement-breakpoint
-- Hand-written: the tasks not yet ended keep what the node noted for them, until now in their metadata (see the
-- SQLite migration 0009).
UPDATE "tasks" SET "node_state" = (
	SELECT jsonb_object_agg(e.key, e.value)::text
	FROM jsonb_each("tasks"."metadata"::jsonb) AS e
	WHERE e.key IN ('hermes/runId', 'hermes/pendingApproval', 'a2a-node/restarts', 'a2a-node/extensions', 'a2a-node/auth-required')
) WHERE "metadata" IS NOT NULL AND "state" IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED');
