-- The plain-HTTP listener's caller was named "local", a name a fleet certificate could also carry. It is now
-- "@local", which no node name can spell; tasks and webhooks made through that listener follow it.
UPDATE `tasks` SET `owner` = '@local' WHERE `owner` = 'local';--> statement-breakpoint
UPDATE `push_configs` SET `owner` = '@local' WHERE `owner` = 'local';
