import type { AgentSkill } from "../protocol/types";
import { SettingProblem } from "./kinds";

/** What a skill may change about the model call; a task picks its skill with message.metadata.skill. */
export interface SkillModel {
  model?: string;
  systemPrompt?: string;
  temperature?: number;
}

/** One [[skills]] table: the card's skill, and optionally its own model settings. */
export interface SkillSetting extends AgentSkill, SkillModel {}

const KNOWN = new Set(["id", "name", "description", "tags", "examples", "model", "system_prompt", "temperature"]);

/** Reads the [[skills]] tables of the config file. */
export function readSkills(v: unknown): SkillSetting[] {
  if (!Array.isArray(v)) throw new SettingProblem("must be an array of [[skills]] tables");
  const ids = new Set<string>();
  return v.map((s, i) => {
    const at = `entry ${i + 1}:`;
    if (typeof s !== "object" || s === null || Array.isArray(s)) throw new SettingProblem(`${at} must be a table`);
    const o = s as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!KNOWN.has(k)) throw new SettingProblem(`${at} unknown key '${k}' (known: ${[...KNOWN].join(", ")})`);
    for (const f of ["id", "name", "description"])
      if (typeof o[f] !== "string" || o[f] === "") throw new SettingProblem(`${at} ${f} must be a non-empty string`);
    if (ids.has(o.id as string)) throw new SettingProblem(`${at} id '${o.id}' is used by an earlier skill`);
    ids.add(o.id as string);
    const strings = (f: string) => {
      const list = o[f] ?? [];
      if (!Array.isArray(list) || list.some((t) => typeof t !== "string"))
        throw new SettingProblem(`${at} ${f} must be a list of strings`);
      return list as string[];
    };
    const skill: SkillSetting = {
      id: o.id as string,
      name: o.name as string,
      description: o.description as string,
      tags: strings("tags"),
    };
    if (o.examples !== undefined) skill.examples = strings("examples");
    if (o.model !== undefined) {
      if (typeof o.model !== "string" || !o.model) throw new SettingProblem(`${at} model must be a non-empty string`);
      skill.model = o.model;
    }
    if (o.system_prompt !== undefined) {
      if (typeof o.system_prompt !== "string") throw new SettingProblem(`${at} system_prompt must be a string`);
      skill.systemPrompt = o.system_prompt;
    }
    if (o.temperature !== undefined) {
      if (typeof o.temperature !== "number") throw new SettingProblem(`${at} temperature must be a number`);
      skill.temperature = o.temperature;
    }
    return skill;
  });
}

/** The card's view of the skills (no model settings). */
export function cardSkills(skills: SkillSetting[]): AgentSkill[] {
  return skills.map(({ model: _m, systemPrompt: _s, temperature: _t, ...skill }) => skill);
}

/** Per-skill model settings by skill id, for the skills that have any. */
export function skillModels(skills: SkillSetting[]): Record<string, SkillModel> {
  const out: Record<string, SkillModel> = {};
  for (const s of skills) {
    const m: SkillModel = {};
    if (s.model !== undefined) m.model = s.model;
    if (s.systemPrompt !== undefined) m.systemPrompt = s.systemPrompt;
    if (s.temperature !== undefined) m.temperature = s.temperature;
    if (Object.keys(m).length) out[s.id] = m;
  }
  return out;
}
