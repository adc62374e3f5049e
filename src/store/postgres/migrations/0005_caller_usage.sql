-- Hand-written after drizzle-kit's table and indexes: triggers that add rows of changes to caller_usage in the
-- transaction of each write to `tasks` and `task_events` (as task_counts gets them, see 0003), then the usage
-- of the rows already stored. A task's bytes are its row's JSON as the size columns count it (head_bytes +
-- history_bytes + artifacts_bytes) and its events' JSON. Inserts and deletes add one row per owner a statement
-- changed; an update adds one row when it changes a task's size, and nothing otherwise (the WHEN is checked per
-- row before the trigger is queued). Events find their owner through their task (retention deletes a task's
-- events before its row). Rows are only added; compactCounts folds them with task_counts'. The tables are
-- locked first so that no replica still running an older binary writes between the sums and the triggers.
LOCK TABLE "tasks", "task_events" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
CREATE TABLE "caller_usage" (
	"owner" text NOT NULL,
	"tasks" integer NOT NULL,
	"bytes" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "caller_usage_owner" ON "caller_usage" USING btree ("owner");
--> statement-breakpoint
CREATE INDEX "push_configs_owner" ON "push_configs" USING btree ("owner");
--> statement-breakpoint
CREATE FUNCTION "caller_usage_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO caller_usage (owner, tasks, bytes) SELECT owner, count(*), sum(head_bytes + history_bytes + artifacts_bytes) FROM new_rows GROUP BY owner;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "caller_usage_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO caller_usage (owner, tasks, bytes) SELECT owner, -count(*), -sum(head_bytes + history_bytes + artifacts_bytes) FROM old_rows GROUP BY owner;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "caller_usage_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO caller_usage (owner, tasks, bytes)
		VALUES (NEW.owner, 0, (NEW.head_bytes + NEW.history_bytes + NEW.artifacts_bytes)::bigint - (OLD.head_bytes + OLD.history_bytes + OLD.artifacts_bytes));
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "caller_usage_events_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO caller_usage (owner, tasks, bytes) SELECT t.owner, 0, sum(octet_length(n.events)) FROM new_rows n JOIN tasks t ON t.id = n.task_id GROUP BY t.owner;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "caller_usage_events_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO caller_usage (owner, tasks, bytes) SELECT t.owner, 0, -sum(octet_length(o.events)) FROM old_rows o JOIN tasks t ON t.id = o.task_id GROUP BY t.owner;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "caller_usage_insert" AFTER INSERT ON "tasks" REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "caller_usage_insert"();
--> statement-breakpoint
CREATE TRIGGER "caller_usage_delete" AFTER DELETE ON "tasks" REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "caller_usage_delete"();
--> statement-breakpoint
CREATE TRIGGER "caller_usage_update" AFTER UPDATE OF "head_bytes", "history_bytes", "artifacts_bytes" ON "tasks"
	FOR EACH ROW WHEN (OLD."head_bytes" + OLD."history_bytes" + OLD."artifacts_bytes" IS DISTINCT FROM NEW."head_bytes" + NEW."history_bytes" + NEW."artifacts_bytes")
	EXECUTE FUNCTION "caller_usage_update"();
--> statement-breakpoint
CREATE TRIGGER "caller_usage_events_insert" AFTER INSERT ON "task_events" REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "caller_usage_events_insert"();
--> statement-breakpoint
CREATE TRIGGER "caller_usage_events_delete" AFTER DELETE ON "task_events" REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "caller_usage_events_delete"();
--> statement-breakpoint
INSERT INTO "caller_usage" ("owner", "tasks", "bytes") SELECT "owner", count(*), sum("head_bytes" + "history_bytes" + "artifacts_bytes") FROM "tasks" GROUP BY "owner";
--> statement-breakpoint
INSERT INTO "caller_usage" ("owner", "tasks", "bytes") SELECT t."owner", 0, sum(octet_length(e."events")) FROM "task_events" e JOIN "tasks" t ON t."id" = e."task_id" GROUP BY t."owner";
