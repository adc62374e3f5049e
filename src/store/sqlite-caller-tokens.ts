import { asc, eq } from "drizzle-orm";
import {
  matchTokenHash,
  newCallerToken,
  hashCallerToken,
  type CallerToken,
  type CallerTokenStore,
} from "../auth/caller-tokens";
import type { Db } from "./database";
import { callerTokens } from "./schema";

export class CallerTokenExistsError extends Error {
  constructor(readonly callerName: string) {
    super(`a token for '${callerName}' already exists`);
  }
}

/**
 * Caller tokens in the home's SQLite database (table caller_tokens: name, SHA-256 of the token). The daemon
 * reads the table at each request it authenticates, so `tokens add` and `tokens revoke` take effect at once,
 * with no reload.
 */
export class SqliteCallerTokens implements CallerTokenStore {
  constructor(private readonly db: Db) {}

  add(name: string, options: { replace?: boolean } = {}): { token: string; created: CallerToken } {
    return this.db.transaction(
      () => {
        const existing = this.db.select().from(callerTokens).where(eq(callerTokens.name, name)).get();
        if (existing && !options.replace) throw new CallerTokenExistsError(name);
        const token = newCallerToken();
        const row = { name, tokenHash: hashCallerToken(token), createdAt: new Date().toISOString() };
        this.db
          .insert(callerTokens)
          .values(row)
          .onConflictDoUpdate({
            target: callerTokens.name,
            set: { tokenHash: row.tokenHash, createdAt: row.createdAt },
          })
          .run();
        return { token, created: { name, createdAt: row.createdAt } };
      },
      { behavior: "immediate" },
    ); // the write lock first: a read then a write under a busy lock fails at once
  }

  list(): CallerToken[] {
    return this.db
      .select({ name: callerTokens.name, createdAt: callerTokens.createdAt })
      .from(callerTokens)
      .orderBy(asc(callerTokens.name))
      .all();
  }

  revoke(name: string): boolean {
    return (
      this.db.delete(callerTokens).where(eq(callerTokens.name, name)).returning({ name: callerTokens.name }).all()
        .length > 0
    );
  }

  verify(token: string): CallerToken | undefined {
    const found = matchTokenHash(token, this.db.select().from(callerTokens).all());
    return found && { name: found.name, createdAt: found.createdAt };
  }
}
