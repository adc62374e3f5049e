CREATE TABLE `push_configs` (
	`task_id` text NOT NULL,
	`id` text NOT NULL,
	`owner` text NOT NULL,
	`url` text NOT NULL,
	`token` text,
	`authentication` text,
	`created_at` text NOT NULL,
	PRIMARY KEY(`task_id`, `id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `push_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`config_id` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text NOT NULL,
	`last_error` text
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `push_deliveries_due` ON `push_deliveries` (`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `task_events` (
	`task_id` text NOT NULL,
	`seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`events` text NOT NULL,
	PRIMARY KEY(`task_id`, `seq`)
) WITHOUT ROWID;
--> statement-breakpoint
ALTER TABLE `tasks` ADD `last_seq` integer DEFAULT 0 NOT NULL;