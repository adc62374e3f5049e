CREATE TABLE `peers` (
	`name` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`fingerprint` text,
	`added_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`context_id` text NOT NULL,
	`owner` text NOT NULL,
	`state` text NOT NULL,
	`status_message` text,
	`status_timestamp` text NOT NULL,
	`metadata` text,
	`request_message_id` text NOT NULL,
	`executor` text NOT NULL,
	`history` text NOT NULL,
	`artifacts` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `tasks_owner_recent` ON `tasks` (`owner`,`status_timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_context` ON `tasks` (`context_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_unfinished` ON `tasks` (`id`) WHERE "tasks"."state" IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_owner_request_message` ON `tasks` (`owner`,`request_message_id`);