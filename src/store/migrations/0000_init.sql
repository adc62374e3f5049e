CREATE TABLE `artifacts` (
	`task_id` text NOT NULL,
	`position` integer NOT NULL,
	`artifact_id` text NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`task_id`, `position`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `artifacts_task_artifact` ON `artifacts` (`task_id`,`artifact_id`);--> statement-breakpoint
CREATE TABLE `messages` (
	`task_id` text NOT NULL,
	`position` integer NOT NULL,
	`message_id` text NOT NULL,
	`role` text NOT NULL,
	`body` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`task_id`, `position`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `peers` (
	`name` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`fingerprint` text,
	`added_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
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
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tasks_owner_recent` ON `tasks` (`owner`,`status_timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_context` ON `tasks` (`context_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_state` ON `tasks` (`state`);--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_owner_request_message` ON `tasks` (`owner`,`request_message_id`);