// POST /v1/embeddings as the simulated engine serves it: the request (zod, OpenAI's field names), the
// prompts (one engine request per input string, keyed as text completion prompts are, so the engine's
// prefix cache and the LB's prefix index see the same blocks), and the response. An embedding is a
// prefill with no decode: each input runs through the engine model for one output step (its pooled
// vector stands in for the first token), and its prompt stays cached. The vectors are deterministic
// unit vectors derived from the text: equal inputs give equal vectors, nothing more is meant by them.
// Token-id inputs are not simulated, as for text completions.
import { hashString32, promptBlockKeys, type BlockKey } from "@meridian/routing";
import { z } from "zod";

/** Vector length when the request names no `dimensions`. */
const DEFAULT_DIMENSIONS = 256;
const MAX_DIMENSIONS = 4096;

export const EmbeddingsBody = z.looseObject({
  input: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  model: z.string().optional(),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: z.number().int().min(1).max(MAX_DIMENSIONS).optional(),
  user: z.string().optional(),
});
export type EmbeddingsBody = z.infer<typeof EmbeddingsBody>;

export interface EmbeddingPrompt {
  text: string;
  blockKeys: BlockKey[];
  promptTokens: number;
}

/** One prompt per input string, with `charsPerToken` characters per prompt token. */
export function embeddingPrompts(body: EmbeddingsBody, charsPerToken: number): EmbeddingPrompt[] {
  const inputs = typeof body.input === "string" ? [body.input] : body.input;
  return inputs.map((text) => ({ text, blockKeys: promptBlockKeys(text), promptTokens: Math.max(1, Math.ceil(text.length / charsPerToken)) }));
}

/** A deterministic unit vector for `text` (mulberry32 seeded by the text's hash). */
export function embeddingVector(text: string, dimensions: number): Float32Array {
  let state = hashString32(text) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  const vector = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const value = next();
    vector[i] = value;
    norm += value * value;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] as number) * scale;
  return vector;
}

export interface EmbeddingResult {
  prompt: EmbeddingPrompt;
  cachedTokens: number;
}

/** The response body: OpenAI's list of embeddings, with usage (and the engine's cached tokens, as
 * vLLM and SGLang report them for completions, so the LB can check its prefix predictions; with
 * `cacheReport` false `prompt_tokens_details: null`, as completions get from such an engine). */
export function embeddingsResponse(body: EmbeddingsBody, model: string, results: readonly EmbeddingResult[], cacheReport: boolean): unknown {
  const dimensions = body.dimensions ?? DEFAULT_DIMENSIONS;
  const promptTokens = results.reduce((sum, r) => sum + r.prompt.promptTokens, 0);
  const cachedTokens = results.reduce((sum, r) => sum + r.cachedTokens, 0);
  return {
    object: "list",
    data: results.map((r, index) => {
      const vector = embeddingVector(r.prompt.text, dimensions);
      return {
        object: "embedding",
        index,
        embedding: body.encoding_format === "base64" ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64") : Array.from(vector),
      };
    }),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, prompt_tokens_details: cacheReport ? { cached_tokens: cachedTokens } : null },
  };
}
