import { type Obj, bad } from "../field-checks";

/* Checks and helpers only the v0.3 wire shapes need (the field checks are shared: ../field-checks.ts). */

export function checkKind(o: Obj, kind: string, where: string): void {
  if (o.kind !== undefined && o.kind !== kind) throw bad(`${where}.kind must be "${kind}"`);
}

export function httpUrl(v: string, where: string): string {
  try {
    const u = new URL(v);
    if (u.protocol === "https:" || u.protocol === "http:") return v;
  } catch {
    // fall through
  }
  throw bad(`${where} must be an http(s) URL`);
}

export const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Drops undefined members, so converted objects serialize and compare like the wire JSON. */
export function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

export const nonEmpty = (s: string | undefined) => (s === undefined || s === "" ? undefined : s);
export const nonEmptyList = <T>(a: T[] | undefined) => (a === undefined || a.length === 0 ? undefined : [...a]);
