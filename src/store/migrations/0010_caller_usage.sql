-- Hand-written after drizzle-kit's table (made WITHOUT ROWID, as every table but `tasks`) and index: triggers
-- that keep caller_usage exactly in step with `tasks` and `task_events` in the same transaction as each write,
-- then the usage of the rows already stored. A task's bytes are its row's JSON as the size columns count it
-- (head_bytes + history_bytes + artifacts_bytes, written by the same statement as the JSON) and its events'
-- JSON; the per-caller quotas (max_caller_bytes, max_caller_tasks) and the free-space floor read one row per
-- caller. An update that leaves a task's size alone (a status change of the same length) costs nothing here.
-- Events are found their owner through their task, so a task's events are deleted before its row.
CREATE TABLE `caller_usage` (
	`owner` text PRIMARY KEY NOT NULL,
	`tasks` integer NOT NULL,
	`bytes` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `push_configs_owner` ON `push_configs` (`owner`);
--> statement-breakpoint
CREATE TRIGGER `caller_usage_insert` AFTER INSERT ON `tasks` BEGIN
	INSERT INTO `caller_usage` (`owner`, `tasks`, `bytes`) VALUES (NEW.`owner`, 1, NEW.`head_bytes` + NEW.`history_bytes` + NEW.`artifacts_bytes`)
		ON CONFLICT (`owner`) DO UPDATE SET `tasks` = `tasks` + 1, `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER `caller_usage_update` AFTER UPDATE OF `head_bytes`, `history_bytes`, `artifacts_bytes` ON `tasks`
	WHEN NEW.`head_bytes` + NEW.`history_bytes` + NEW.`artifacts_bytes` IS NOT OLD.`head_bytes` + OLD.`history_bytes` + OLD.`artifacts_bytes` BEGIN
	UPDATE `caller_usage` SET `bytes` = `bytes` + (NEW.`head_bytes` + NEW.`history_bytes` + NEW.`artifacts_bytes`) - (OLD.`head_bytes` + OLD.`history_bytes` + OLD.`artifacts_bytes`)
		WHERE `owner` = NEW.`owner`;
END;
--> statement-breakpoint
CREATE TRIGGER `caller_usage_delete` AFTER DELETE ON `tasks` BEGIN
	UPDATE `caller_usage` SET `tasks` = `tasks` - 1, `bytes` = `bytes` - (OLD.`head_bytes` + OLD.`history_bytes` + OLD.`artifacts_bytes`) WHERE `owner` = OLD.`owner`;
END;
--> statement-breakpoint
CREATE TRIGGER `caller_usage_events_insert` AFTER INSERT ON `task_events` BEGIN
	UPDATE `caller_usage` SET `bytes` = `bytes` + octet_length(NEW.`events`) WHERE `owner` = (SELECT `owner` FROM `tasks` WHERE `id` = NEW.`task_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `caller_usage_events_delete` AFTER DELETE ON `task_events` BEGIN
	UPDATE `caller_usage` SET `bytes` = `bytes` - octet_length(OLD.`events`) WHERE `owner` = (SELECT `owner` FROM `tasks` WHERE `id` = OLD.`task_id`);
END;
--> statement-breakpoint
INSERT INTO `caller_usage` (`owner`, `tasks`, `bytes`) SELECT `owner`, count(*), sum(`head_bytes` + `history_bytes` + `artifacts_bytes`) FROM `tasks` GROUP BY `owner`;
--> statement-breakpoint
UPDATE `caller_usage` SET `bytes` = `bytes` + coalesce((SELECT sum(octet_length(e.`events`)) FROM `task_events` e JOIN `tasks` t ON t.`id` = e.`task_id` WHERE t.`owner` = `caller_usage`.`owner`), 0);
