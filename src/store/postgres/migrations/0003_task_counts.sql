-- Hand-written after drizzle-kit's table and index: triggers that add rows of changes to task_counts in the
-- transaction of each write to `tasks`, then the count of the rows already stored. Inserts and deletes (creates
-- and retention come in batches) add one row per (owner, state) a statement changed; an update adds two rows
-- when it changes a task's state, and nothing otherwise (the WHEN is checked per row before the trigger is
-- queued, so the updates that stream artifacts or append messages cost nothing here). A row trigger rather
-- than a statement one for updates: a statement trigger's transition tables would copy every updated row,
-- large artifacts included. Rows are only added (see schema.ts for why); the store folds them
-- together now and then (compactCounts). The table is locked first so that no replica still running an older
-- binary commits a task between the count below and the triggers taking effect.
LOCK TABLE "tasks" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
CREATE TABLE "task_counts" (
	"owner" text NOT NULL,
	"state" text NOT NULL,
	"n" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "task_counts_owner_state" ON "task_counts" USING btree ("owner","state");
--> statement-breakpoint
CREATE FUNCTION "task_counts_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO task_counts (owner, state, n) SELECT owner, state, count(*) FROM new_rows GROUP BY owner, state;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "task_counts_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO task_counts (owner, state, n) SELECT owner, state, -count(*) FROM old_rows GROUP BY owner, state;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "task_counts_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO task_counts (owner, state, n) VALUES (OLD.owner, OLD.state, -1), (NEW.owner, NEW.state, 1);
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "task_counts_insert" AFTER INSERT ON "tasks" REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_insert"();
--> statement-breakpoint
CREATE TRIGGER "task_counts_delete" AFTER DELETE ON "tasks" REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION "task_counts_delete"();
--> statement-breakpoint
CREATE TRIGGER "task_counts_update" AFTER UPDATE OF "owner", "state" ON "tasks"
	FOR EACH ROW WHEN (OLD."owner" IS DISTINCT FROM NEW."owner" OR OLD."state" IS DISTINCT FROM NEW."state")
	EXECUTE FUNCTION "task_counts_update"();
--> statement-breakpoint
INSERT INTO "task_counts" ("owner", "state", "n") SELECT "owner", "state", count(*) FROM "tasks" GROUP BY "owner", "state";
