/**
 * What a commit the node has acknowledged survives, in the home's SQLite file. "process-crash" (the default):
 * a crash or `kill -9` of the process loses nothing; an OS crash or a power loss may lose the last commits
 * (synchronous=NORMAL: the WAL is synced only at checkpoints). "fsync": those too lose nothing
 * (synchronous=FULL: the WAL is synced at every commit, and a commit carries every task written in that turn
 * of the event loop, see group-commit.ts). Its own module, without SQLite, since the settings name it too.
 */
export const DURABILITY_LEVELS = ["process-crash", "fsync"] as const;
export type Durability = (typeof DURABILITY_LEVELS)[number];

/** The SQLite `synchronous` pragma of each level (in WAL mode). */
export const SYNCHRONOUS: Record<Durability, "NORMAL" | "FULL"> = { "process-crash": "NORMAL", fsync: "FULL" };
