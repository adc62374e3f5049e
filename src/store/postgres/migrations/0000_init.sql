CREATE TABLE "push_configs" (
	"task_id" text COLLATE "C" NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"url" text NOT NULL,
	"token" text,
	"authentication" text,
	"created_at" text NOT NULL,
	CONSTRAINT "push_configs_task_id_id_pk" PRIMARY KEY("task_id","id")
);
--> statement-breakpoint
CREATE TABLE "push_deliveries" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"task_id" text COLLATE "C" NOT NULL,
	"config_id" text COLLATE "C" NOT NULL,
	"body" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" text NOT NULL,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "task_events" (
	"task_id" text COLLATE "C" NOT NULL,
	"seq" integer NOT NULL,
	"last_seq" integer NOT NULL,
	"events" text NOT NULL,
	CONSTRAINT "task_events_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "task_leases" (
	"task_id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"replica" text NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"context_id" text COLLATE "C" NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"state" text NOT NULL,
	"status_timestamp" text COLLATE "C" NOT NULL,
	"last_seq" integer DEFAULT 0 NOT NULL,
	"request_message_id" text COLLATE "C",
	"executor" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	"head_bytes" integer DEFAULT 0 NOT NULL,
	"history_bytes" integer DEFAULT 0 NOT NULL,
	"artifacts_bytes" integer DEFAULT 0 NOT NULL,
	"status_message" text,
	"metadata" text,
	"history" text NOT NULL,
	"artifacts" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "push_deliveries_due" ON "push_deliveries" USING btree ("next_attempt_at");--> statement-breakpoint
CREATE INDEX "push_deliveries_task" ON "push_deliveries" USING btree ("task_id","config_id");--> statement-breakpoint
CREATE INDEX "tasks_owner_recent" ON "tasks" USING btree ("owner","status_timestamp","id","state","head_bytes","history_bytes","artifacts_bytes");--> statement-breakpoint
CREATE INDEX "tasks_context" ON "tasks" USING btree ("context_id","owner");--> statement-breakpoint
CREATE INDEX "tasks_unfinished" ON "tasks" USING btree ("id") WHERE "tasks"."state" IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_owner_request_message" ON "tasks" USING btree ("owner","request_message_id");