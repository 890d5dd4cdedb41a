// The `input` of POST /v1/embeddings, and a token-id `prompt` of /v1/completions, as routing needs
// them: the text whose block keys place the request (prompt keys, as for a completion), and its
// size as admission reads it (PromptSize). An embedding is a prefill without decode, so the
// prompt is all there is to place and to cache.
// - A string is keyed whole.
// - An array of strings is one batch on one replica: keyed by its first string (the part most
//   likely shared with earlier requests), its estimate counts every string.
// - Token ids (an array of integers, or an array of such arrays; OpenAI's prompt and input take both,
//   lm-evaluation-harness sends them by default) are the engine's own tokens: each id is keyed as
//   exactly TOKEN_ID_CHARS characters, so a 64-character block is 16 ids, and are counted as the
//   tokens they are (a CJK fleet's text at 1.2 characters a token read 3000 ids as 10000 tokens, and
//   every id answer pulled the fleet's ratio towards 4). A batch is keyed by its first prompt and
//   counted whole, as for strings.
import { DEFAULT_BLOCK_CHARS } from "@meridian/routing";
import { badRequest } from "./errors";

/** Characters one token id stands for in the keys and the token estimate (the design's chars / 4). */
const TOKEN_ID_CHARS = 4;
/** Ids are written in base 36, TOKEN_ID_CHARS digits: 1.68M ids, above any vocabulary (262k at most
 * today). A larger id, which no engine accepts, wraps: its key may meet another's, its width stays. */
const TOKEN_ID_SPAN = 36 ** TOKEN_ID_CHARS;
/** Ids one block key stands for: a 64-character block of TOKEN_ID_CHARS an id. */
const TOKEN_ID_BLOCK_TOKENS = DEFAULT_BLOCK_CHARS / TOKEN_ID_CHARS;

/** The size of a text prompt of `promptChars` characters, `mediaParts` of them media stand-ins. */
export const textSize = (promptChars: number, mediaParts = 0): PromptSize => ({ promptChars, calibrates: mediaParts === 0 });

const idsInput = (text: string, ids: number): PromptInput => ({
  text,
  promptChars: ids * TOKEN_ID_CHARS,
  size: { inputTokens: ids, tokensPerBlock: TOKEN_ID_BLOCK_TOKENS },
});

/** A prompt's size as the LB admits it (lb-core AdmitInput): text by its characters, through the
 * calibrated characters per token, teaching that ratio only when the prompt is all text (a media part
 * is a fixed stand-in the engine does not spend); token ids by their count, exactly, keyed
 * TOKEN_ID_BLOCK_TOKENS a block, teaching nothing (an id is not 4 characters of anyone's text). */
export type PromptSize = { promptChars: number; calibrates: boolean } | { inputTokens: number; tokensPerBlock: number };

export interface PromptInput {
  /** What the block keys are computed from. */
  text: string;
  /** Characters the keys are cut from (of a batch: of all its prompts). */
  promptChars: number;
  size: PromptSize;
}

/** A non-empty array of token ids (integers >= 0). */
export const isTokenIds = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((v) => Number.isInteger(v) && v >= 0);

const idText = (ids: readonly number[]): string => ids.map((id) => (id % TOKEN_ID_SPAN).toString(36).padStart(TOKEN_ID_CHARS, "0")).join("");

/** A token-id prompt or input (ids, or a non-empty array of ids arrays) as routing reads it; null
 * when `value` is not one. */
export function tokenIdPrompt(value: unknown): PromptInput | null {
  if (isTokenIds(value)) return idsInput(idText(value), value.length);
  if (Array.isArray(value) && value.length > 0 && value.every(isTokenIds)) {
    const batches = value as number[][];
    return idsInput(
      idText(batches[0] as number[]),
      batches.reduce((sum, ids) => sum + ids.length, 0),
    );
  }
  return null;
}

export function embeddingInput(body: Record<string, unknown>): PromptInput {
  const input = body["input"];
  if (typeof input === "string" && input !== "") return { text: input, promptChars: input.length, size: textSize(input.length) };
  if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === "string" && item !== "")) {
    const texts = input as string[];
    const promptChars = texts.reduce((sum, text) => sum + text.length, 0);
    return { text: texts[0] as string, promptChars, size: textSize(promptChars) };
  }
  const ids = tokenIdPrompt(input);
  if (ids !== null) return ids;
  throw badRequest(
    "'input' is required and must be a non-empty string, an array of non-empty strings, or an array of token ids (or of such arrays)",
    "input",
    input === undefined ? "missing_required_parameter" : "invalid_type",
  );
}
