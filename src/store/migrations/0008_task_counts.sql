-- Hand-written after drizzle-kit's table (made WITHOUT ROWID, as every table but `tasks`): the triggers that
-- keep task_counts exactly in step with `tasks` in the same transaction as each write, then the count of the
-- rows already stored. ListTasks reads totalSize from it (see SqliteTaskStore.list). A task's state changes
-- a few times in its life; its other writes (artifacts, messages) leave the counts alone.
CREATE TABLE `task_counts` (
	`owner` text NOT NULL,
	`state` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`owner`, `state`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `task_counts_insert` AFTER INSERT ON `tasks` BEGIN
	INSERT INTO `task_counts` (`owner`, `state`, `n`) VALUES (NEW.`owner`, NEW.`state`, 1)
		ON CONFLICT (`owner`, `state`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `task_counts_delete` AFTER DELETE ON `tasks` BEGIN
	UPDATE `task_counts` SET `n` = `n` - 1 WHERE `owner` = OLD.`owner` AND `state` = OLD.`state`;
END;
--> statement-breakpoint
CREATE TRIGGER `task_counts_update` AFTER UPDATE OF `owner`, `state` ON `tasks`
	WHEN OLD.`owner` IS NOT NEW.`owner` OR OLD.`state` IS NOT NEW.`state` BEGIN
	UPDATE `task_counts` SET `n` = `n` - 1 WHERE `owner` = OLD.`owner` AND `state` = OLD.`state`;
	INSERT INTO `task_counts` (`owner`, `state`, `n`) VALUES (NEW.`owner`, NEW.`state`, 1)
		ON CONFLICT (`owner`, `state`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
INSERT INTO `task_counts` (`owner`, `state`, `n`) SELECT `owner`, `state`, count(*) FROM `tasks` GROUP BY `owner`, `state`;
