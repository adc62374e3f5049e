import { monotonicFactory } from "ulid";

/** ULIDs sort by creation time, and the monotonic factory keeps that true within one millisecond. */
export const newId: () => string = monotonicFactory();

/** Timestamps as the protocol wants them: ISO-8601 UTC with milliseconds. */
export const now = (): string => new Date().toISOString();
