import { SettingProblem } from "./kinds";
import { readSkills, type SkillSetting } from "./skills";

/**
 * The [extended_card] table: what fleet members see in GetExtendedAgentCard on top of the public card. The
 * public card stays what it is (skills from [[skills]], the description); this adds skills and may say more.
 */
export interface ExtendedCardSetting {
  /** Replaces the public card's description in the extended card. */
  description?: string;
  /** Listed after the public skills; each may have its own model settings, as [[skills]] entries do. */
  skills: SkillSetting[];
}

const KNOWN = new Set(["description", "skills"]);

/** Reads the [extended_card] table of the config file. */
export function readExtendedCard(v: unknown): ExtendedCardSetting {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new SettingProblem("must be a table ([extended_card])");
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!KNOWN.has(k)) throw new SettingProblem(`unknown key '${k}' (known: ${[...KNOWN].join(", ")})`);
  if (o.description !== undefined && (typeof o.description !== "string" || o.description.trim() === ""))
    throw new SettingProblem("description must be a non-empty string");
  let skills: SkillSetting[] = [];
  if (o.skills !== undefined) {
    try {
      skills = readSkills(o.skills);
    } catch (err) {
      if (err instanceof SettingProblem)
        throw new SettingProblem(`skills (the [[extended_card.skills]] tables): ${err.message}`);
      throw err;
    }
  }
  // An empty table would announce an extended card that says nothing more than the public one.
  if (skills.length === 0 && o.description === undefined)
    throw new SettingProblem(
      "has neither description nor [[extended_card.skills]]: add what fleet members should see beyond the public card, or remove the table",
    );
  return { ...(o.description !== undefined ? { description: o.description as string } : {}), skills };
}
