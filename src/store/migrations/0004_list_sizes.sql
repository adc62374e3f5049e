DROP INDEX `tasks_owner_recent`;--> statement-breakpoint
ALTER TABLE `tasks` ADD `head_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `history_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `artifacts_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Backfill (hand-written): the sizes of the rows written before these columns existed, computed as the store's
-- statements compute them, before the index is built so it is built once.
UPDATE `tasks` SET
  `head_bytes` = octet_length(`id`) + octet_length(`context_id`) + coalesce(octet_length(`status_message`), 0) + coalesce(octet_length(`metadata`), 0),
  `history_bytes` = octet_length(`history`),
  `artifacts_bytes` = octet_length(`artifacts`);--> statement-breakpoint
CREATE INDEX `tasks_owner_recent` ON `tasks` (`owner`,`status_timestamp`,`id`,`state`,`head_bytes`,`history_bytes`,`artifacts_bytes`);