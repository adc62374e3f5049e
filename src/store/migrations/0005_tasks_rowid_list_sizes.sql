-- Hand-written (drizzle-kit generated only the size columns and the index): `tasks` becomes a rowid table
-- whose small columns come first and JSON last (see schema.ts for why), with the size columns ListTasks plans
-- its pages from. The rows are copied in id order, their sizes computed as the store's statements compute
-- them (octet_length of the JSON text); the indexes are built once, after the copy.
CREATE TABLE `tasks_new` (
	`id` text PRIMARY KEY NOT NULL,
	`context_id` text NOT NULL,
	`owner` text NOT NULL,
	`state` text NOT NULL,
	`status_timestamp` text NOT NULL,
	`last_seq` integer DEFAULT 0 NOT NULL,
	`working_at` text,
	`request_message_id` text NOT NULL,
	`executor` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`head_bytes` integer DEFAULT 0 NOT NULL,
	`history_bytes` integer DEFAULT 0 NOT NULL,
	`artifacts_bytes` integer DEFAULT 0 NOT NULL,
	`status_message` text,
	`metadata` text,
	`history` text NOT NULL,
	`artifacts` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `tasks_new` (`id`, `context_id`, `owner`, `state`, `status_timestamp`, `last_seq`, `working_at`, `request_message_id`,
	`executor`, `created_at`, `updated_at`, `head_bytes`, `history_bytes`, `artifacts_bytes`, `status_message`, `metadata`, `history`, `artifacts`)
SELECT `id`, `context_id`, `owner`, `state`, `status_timestamp`, `last_seq`, `working_at`, `request_message_id`,
	`executor`, `created_at`, `updated_at`,
	octet_length(`id`) + octet_length(`context_id`) + coalesce(octet_length(`status_message`), 0) + coalesce(octet_length(`metadata`), 0),
	octet_length(`history`), octet_length(`artifacts`), `status_message`, `metadata`, `history`, `artifacts`
FROM `tasks` ORDER BY `id`;
--> statement-breakpoint
DROP TABLE `tasks`;
--> statement-breakpoint
ALTER TABLE `tasks_new` RENAME TO `tasks`;
--> statement-breakpoint
CREATE INDEX `tasks_owner_recent` ON `tasks` (`owner`,`status_timestamp`,`id`,`state`,`head_bytes`,`history_bytes`,`artifacts_bytes`);--> statement-breakpoint
CREATE INDEX `tasks_context` ON `tasks` (`context_id`,`id`) WHERE "tasks"."context_id" != "tasks"."id";--> statement-breakpoint
CREATE INDEX `tasks_unfinished` ON `tasks` (`id`) WHERE "tasks"."state" IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_owner_request_message` ON `tasks` (`owner`,`request_message_id`);
