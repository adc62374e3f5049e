CREATE TABLE "task_answers" (
	"id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"owner" text NOT NULL,
	"message" text NOT NULL
);
