DROP INDEX `tasks_context`;--> statement-breakpoint
CREATE INDEX `tasks_context` ON `tasks` (`context_id`,`id`) WHERE "tasks"."context_id" != "tasks"."id";