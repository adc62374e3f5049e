CREATE TABLE `caller_tokens` (
	`name` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` text NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
ALTER TABLE `peers` ADD `trust` text DEFAULT 'fleet' NOT NULL;--> statement-breakpoint
ALTER TABLE `peers` ADD `ca_file` text;--> statement-breakpoint
ALTER TABLE `peers` ADD `auth_kind` text;--> statement-breakpoint
ALTER TABLE `peers` ADD `auth_file` text;--> statement-breakpoint
ALTER TABLE `peers` ADD `insecure_http` integer DEFAULT false NOT NULL;