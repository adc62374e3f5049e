-- What the node and its executor keep about a task (a remote run's id, a pending approval, how often it was
-- resumed, the extensions its execution has), in a column of its own: the caller writes `metadata`, and nothing
-- it sends is read back as the node's own (see schema.ts).
ALTER TABLE `tasks` ADD `node_state` text;
--> statement-breakpoint
-- Hand-written: the tasks not yet ended keep what the node noted for them, until now in their metadata, so an
-- upgrade mid-task re-attaches to its Hermes run, retries its AUTH_REQUIRED message and keeps its extensions.
-- Ended tasks are never read back; their metadata stays as it was.
UPDATE `tasks` SET `node_state` = (
	SELECT nullif(json_group_object(`key`, CASE WHEN `type` IN ('object', 'array') THEN json(`value`) ELSE `value` END), '{}')
	FROM json_each(`tasks`.`metadata`)
	WHERE `key` IN ('hermes/runId', 'hermes/pendingApproval', 'a2a-node/restarts', 'a2a-node/extensions', 'a2a-node/auth-required')
) WHERE `metadata` IS NOT NULL AND `state` IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED');
