import { decodeText, essence, guessMediaType, isTextType, MODEL_IMAGE_TYPES } from "../protocol/media-types";
import type { Message, Part } from "../protocol/types";

/** One part of an OpenAI chat message's content array (the shapes the chat-completions API defines). */
export type ChatContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  /** A string, or (when the message carries images) an array of text and image_url parts. */
  content: string | ChatContentPart[];
}

/** What a part is to a chat model: text it reads, an image it may see, or something it cannot take. */
type Judged = { text: string } | { image: string; name: string } | { refused: string };

function judge(p: Part, i: number): Judged {
  if (p.text !== undefined) return { text: p.text };
  if (p.data !== undefined) return { text: JSON.stringify(p.data) };
  const name = p.filename ?? `part ${i}`;
  if (p.url !== undefined)
    return {
      refused: `part ${i} is a file by URL (${p.url}); this agent reads files sent with their bytes only (a2a-node send --file PATH)`,
    };
  if (p.raw === undefined) return { refused: `part ${i} has no content` };
  const bytes = Buffer.from(p.raw, "base64");
  const type = essence(p.mediaType ?? guessMediaType(name, bytes));
  if (MODEL_IMAGE_TYPES.includes(type)) return { image: `data:${type};base64,${p.raw}`, name };
  if (isTextType(type)) {
    const text = decodeText(bytes);
    if (text === undefined) return { refused: `part ${i} (${name}) says ${type} but is not UTF-8 text` };
    return { text: `File ${name} (${type}):\n${text}` };
  }
  return {
    refused: `part ${i} is ${name} (${type}); this agent's model takes text, JSON data, text files and images (${MODEL_IMAGE_TYPES.map((t) => t.slice(6)).join(", ")})`,
  };
}

/** Why a message cannot go to a chat model (the first part it cannot take), or undefined. */
export function refusedPart(message: Message): string | undefined {
  for (const [i, p] of message.parts.entries()) {
    const j = judge(p, i);
    if ("refused" in j) return j.refused;
  }
  return undefined;
}

/**
 * A message as the chat-completions API takes it. Text, data and text files become text (files under a
 * "File NAME (TYPE):" line); images become image_url parts with data: URLs, in the current message only:
 * an earlier turn's image is named, not sent again, so a model that cannot see images is not handed one
 * on every later turn of the conversation.
 */
export function toChat(m: Message, current: boolean): { message: ChatMessage; images: number } {
  const role = m.role === "ROLE_AGENT" ? "assistant" : "user";
  const texts: string[] = [];
  const images: ChatContentPart[] = [];
  for (const [i, p] of m.parts.entries()) {
    const j = judge(p, i);
    if ("text" in j) {
      if (j.text) texts.push(j.text);
    } else if ("image" in j) {
      if (current && role === "user") images.push({ type: "image_url", image_url: { url: j.image } });
      else texts.push(`[image ${j.name}, sent with an earlier message]`);
    }
  }
  const text = texts.join("\n");
  if (images.length === 0) return { message: { role, content: text }, images: 0 };
  return {
    message: { role, content: [...(text ? [{ type: "text" as const, text }] : []), ...images] },
    images: images.length,
  };
}

/** Characters of text a chat message holds (images count for nothing against the history budget). */
export function textLength(m: ChatMessage): number {
  return typeof m.content === "string"
    ? m.content.length
    : m.content.reduce((n, p) => n + (p.type === "text" ? p.text.length : 0), 0);
}
