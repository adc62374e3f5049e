import { A2AError } from "./errors";

/*
 * The field checks both readers of what clients send share: the v1.0 params (validate.ts) and the v0.3 wire
 * shapes (v03/). Each names the exact field that is wrong and throws -32602 InvalidParams; absent means
 * undefined or null.
 */

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
export const bad = (msg: string) => A2AError.invalidParams(msg);
export const absent = (v: unknown) => v === undefined || v === null;

export function optString(o: Obj, key: string, where: string): string | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "string") throw bad(`${where}.${key} must be a string`);
  return v;
}

export function nonEmptyString(o: Obj, key: string, where: string): string {
  const v = o[key];
  if (typeof v !== "string" || v.length === 0) throw bad(`${where}.${key} must be a non-empty string`);
  return v;
}

export function optInt(
  o: Obj,
  key: string,
  where: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    throw bad(
      `${where}.${key} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? " up" : ` to ${max}`}`,
    );
  return v;
}

export function optBool(o: Obj, key: string, where: string): boolean | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (typeof v !== "boolean") throw bad(`${where}.${key} must be true or false`);
  return v;
}

export function optObject(o: Obj, key: string, where: string): Obj | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (!isObj(v)) throw bad(`${where}.${key} must be an object`);
  return v;
}

export function optStringArray(o: Obj, key: string, where: string): string[] | undefined {
  const v = o[key];
  if (absent(v)) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string"))
    throw bad(`${where}.${key} must be an array of strings`);
  return v as string[];
}
