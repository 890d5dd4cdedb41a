// The `input` of POST /v1/embeddings, as routing needs it: the text whose block keys place the request
// (prompt keys, as for a completion), and the characters its token estimate is made from. An
// embedding is a prefill without decode, so the prompt is all there is to place and to cache.
// - A string is keyed whole.
// - An array of strings is one batch on one replica: keyed by its first string (the part most
//   likely shared with earlier requests), its estimate counts every string.
// - Token ids (an array of integers, or an array of such arrays) are keyed by their decimal text, so
//   equal id prefixes still meet on one replica; each id counts as TOKEN_ID_CHARS characters.
import { badRequest } from "./errors";

/** Characters one token id stands for in the token estimate (the design's chars / 4). */
const TOKEN_ID_CHARS = 4;

export interface EmbeddingInput {
  /** What the block keys are computed from. */
  text: string;
  /** Characters for the token estimate. */
  promptChars: number;
}

const isTokenIds = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((v) => Number.isInteger(v) && v >= 0);

export function embeddingInput(body: Record<string, unknown>): EmbeddingInput {
  const input = body["input"];
  if (typeof input === "string" && input !== "") return { text: input, promptChars: input.length };
  if (Array.isArray(input) && input.length > 0) {
    if (input.every((item) => typeof item === "string" && item !== "")) {
      const texts = input as string[];
      return { text: texts[0] as string, promptChars: texts.reduce((sum, text) => sum + text.length, 0) };
    }
    if (isTokenIds(input)) return { text: input.join(" "), promptChars: input.length * TOKEN_ID_CHARS };
    if (input.every(isTokenIds)) {
      const batches = input as number[][];
      return { text: (batches[0] as number[]).join(" "), promptChars: batches.reduce((sum, ids) => sum + ids.length, 0) * TOKEN_ID_CHARS };
    }
  }
  throw badRequest(
    "'input' is required and must be a non-empty string, an array of non-empty strings, or an array of token ids (or of such arrays)",
    "input",
    input === undefined ? "missing_required_parameter" : "invalid_type",
  );
}
