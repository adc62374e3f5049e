-- What the node and its executor keep about a task (a remote run's id, a pending approval, how often it was
-- resumed, the extensions its execution has), in a column of its own: the caller writes `metadata`, and nothing
-- it sends is read back as the node's own (see schema.ts).
ALTER TABLE `tasks` ADD `node_state` text;
