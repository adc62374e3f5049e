CREATE TABLE "health_probe" (
	"id" integer PRIMARY KEY NOT NULL,
	"checked_at" text NOT NULL,
	"replica" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "task_answers" (
	"id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"owner" text NOT NULL,
	"message" text NOT NULL
);
