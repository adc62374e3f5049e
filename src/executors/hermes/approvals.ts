import type { Message } from "../../protocol/types";
import { messageText } from "../executor";
import type { HermesApproval } from "./runs-api";

/*
 * A Hermes approval as a person sees it in A2A: the question (what the command is and why it needs a yes),
 * and the answers people type mapped to the choices the runs API takes (once | session | always | deny).
 */

/** Every choice the runs API knows; a run offers these or fewer (["once", "deny"] for a smart-denied command). */
export const ALL_CHOICES = ["once", "session", "always", "deny"] as const;

/** Words people answer with, to the choice they mean. */
const WORDS: Record<string, string> = {
  yes: "once",
  y: "once",
  ok: "once",
  okay: "once",
  approve: "once",
  approved: "once",
  allow: "once",
  no: "deny",
  n: "deny",
  deny: "deny",
  denied: "deny",
  reject: "deny",
  once: "once",
  session: "session",
  always: "always",
};

/** The choices a pending approval offers (all four when the server did not say). */
export function offered(approval: HermesApproval): string[] {
  const c = Array.isArray(approval.choices) ? approval.choices.filter((x): x is string => typeof x === "string") : [];
  return c.length > 0 ? c : [...ALL_CHOICES];
}

/** The id a newer server answers this approval by, if it gave one. */
export function requestIdOf(approval: HermesApproval): string | undefined {
  const id = approval.request_id ?? approval.approval_id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/**
 * The choice an answer means, or the reason it means none the run offered. Case, surrounding space, quotes and a
 * final full stop or exclamation mark do not matter ("Yes." is yes).
 */
export function choiceOf(answer: Message, approval: HermesApproval): { choice: string } | { refused: string } {
  const raw = messageText(answer);
  const word = raw
    .trim()
    .toLowerCase()
    .replace(/^["'`]+|["'`.!]+$/g, "");
  const choice = WORDS[word];
  const choices = offered(approval);
  if (choice && choices.includes(choice)) return { choice };
  const shown = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return {
    refused: `"${shown}" is not an answer to this Hermes approval; answer one of: ${choices.join(", ")} (yes means once, no means deny)`,
  };
}

/** The INPUT_REQUIRED status text: what a person needs to decide. */
export function question(approval: HermesApproval): string {
  const lines = ["Hermes asks for approval before it goes on."];
  if (typeof approval.description === "string" && approval.description) lines.push(`Why: ${approval.description}`);
  if (typeof approval.command === "string" && approval.command) lines.push(`Command: ${approval.command}`);
  lines.push(`Answer with one of: ${offered(approval).join(", ")} (yes means once, no means deny).`);
  return lines.join("\n");
}

/** The approval as a program reads it from the status message's metadata (no envelope fields). */
export function approvalMetadata(runId: string, approval: HermesApproval): Record<string, unknown> {
  const {
    event: _event,
    run_id: _runId,
    timestamp: _timestamp,
    ...fields
  } = approval as HermesApproval & { event?: unknown; timestamp?: unknown };
  return { "hermes/approval": { run_id: runId, ...fields, choices: offered(approval) } };
}
