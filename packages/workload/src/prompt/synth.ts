// Prompt synthesis for live replay: every trace hash id becomes a deterministic block of text
// (words drawn from an RNG seeded by the id), and a prompt is its blocks concatenated. Requests
// whose hash ids share a prefix therefore share a text prefix, which is exactly what prefix-aware
// routing and the engines' prefix caches need to see.
import { createRng, hash32 } from "../hash";
import type { HashId, TraceRequest } from "../trace/types";

/** Characters per token assumed when sizing text; the routing layer estimates tokens the same way. */
export const CHARS_PER_TOKEN = 4;

// A small everyday vocabulary: words of varied length so the text tokenises like prose.
const VOCABULARY = (
  "the of and to in is that for it as was with be by on not he this are or his from at which but " +
  "have an they you were her she there been one all we their has would when if so no will more can " +
  "about other into time some could them see only these two may then do first any my now such like " +
  "our over man me even most made after also did many before must through back years where much your " +
  "way well down should because each just those people how too little state good very make world still " +
  "own see men work long here get both between life being under never day same another know while last " +
  "might us great old year off come since against go came right used take three states himself few house " +
  "use during without again place around however home small found thought went say part once general high " +
  "upon school every government number system request replica region cache token prefix latency router"
).split(" ");

export interface BlockTextOptions {
  /** Tokens per block (the trace's block size). */
  blockTokens: number;
  /** Characters per token (default 4). The block is exactly blockTokens × this many characters. */
  charsPerToken?: number;
}

/**
 * Deterministic filler text of exactly `length` characters: words from an RNG seeded by `key`.
 * It always ends in a space or is cut mid-word at its exact length, so concatenated pieces never
 * depend on their neighbours.
 */
export function synthText(key: string, length: number): string {
  const rng = createRng(hash32(key));
  const words: string[] = [];
  let size = 0;
  while (size < length) {
    const word = VOCABULARY[Math.floor(rng.next() * VOCABULARY.length)] as string;
    words.push(word);
    size += word.length + 1;
  }
  return words.join(" ").concat(" ").slice(0, length);
}

// Blocks repeat heavily (block 0 is in every Mooncake request), so keep recent ones.
const BLOCK_CACHE_LIMIT = 4096;
const blockCache = new Map<string, string>();

/**
 * The text of one block: words from an RNG seeded by the id, exactly blockTokens × charsPerToken
 * characters long so trace blocks align with character-based block keys downstream.
 */
export function blockText(id: HashId, options: BlockTextOptions): string {
  const length = options.blockTokens * (options.charsPerToken ?? CHARS_PER_TOKEN);
  const cacheKey = `${typeof id}:${id}:${length}`;
  const cached = blockCache.get(cacheKey);
  if (cached !== undefined) return cached;
  const text = synthText(`block:${typeof id}:${id}`, length);
  if (blockCache.size >= BLOCK_CACHE_LIMIT) blockCache.delete(blockCache.keys().next().value as string);
  blockCache.set(cacheKey, text);
  return text;
}

/** The full prompt text of a hash-id chain: its blocks concatenated. */
export function promptText(hashIds: readonly HashId[], options: BlockTextOptions): string {
  return hashIds.map((id) => blockText(id, options)).join("");
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface TraceMessagesOptions {
  /** Leading blocks that form the system message (default 1: Mooncake's block 0 is a shared system prompt). */
  systemBlocks?: number;
  /**
   * Trim the text to the row's input_length × charsPerToken (default true). Only the last block is
   * partial in the trace (len(hash_ids) = ceil(input_length / block)), and trimming keeps its start,
   * so shared prefixes stay shared. When that ends inside the system blocks (a row shorter than
   * them), the system text is cut too, leaving room for the minimal user turn.
   */
  fitInputLength?: boolean;
  charsPerToken?: number;
}

// Used when a request is nothing but its system blocks: a chat request needs a user turn.
const EMPTY_USER_TURN = "Continue.";

/**
 * OpenAI chat messages (system + user) for a trace request. ART-Chat rows that carry a recorded
 * body with messages use those verbatim.
 */
export function traceMessages(request: TraceRequest, options: TraceMessagesOptions = {}): ChatMessage[] {
  const recorded = request.body?.messages;
  if (Array.isArray(recorded) && recorded.length > 0) return recorded as ChatMessage[];
  const charsPerToken = options.charsPerToken ?? CHARS_PER_TOKEN;
  const blockOptions = { blockTokens: request.blockTokens, charsPerToken };
  const systemBlocks = Math.min(options.systemBlocks ?? 1, request.hashIds.length);
  let systemText = promptText(request.hashIds.slice(0, systemBlocks), blockOptions);
  let userIds = request.hashIds.slice(systemBlocks);
  const fit = options.fitInputLength ?? true;
  const inputChars = request.inputTokens * charsPerToken;
  // A row that ends inside its system blocks (one shorter than a block: its one id is a partial
  // block 0) is that much text, not a whole system block: the system text is cut and the user turn
  // is the minimal one, so the engines see the load the trace (and the simulator) says.
  if (fit && inputChars <= systemText.length) {
    systemText = systemText.slice(0, Math.max(0, inputChars - EMPTY_USER_TURN.length));
    userIds = [];
  }
  const budget = inputChars - systemText.length;
  // Only the blocks the budget reaches are built: a row with far more ids than its input_length
  // would otherwise build a string past V8's limit just to cut it down to a few characters.
  if (fit) userIds = userIds.slice(0, Math.max(0, Math.ceil(budget / (request.blockTokens * charsPerToken))));
  let userText = promptText(userIds, blockOptions);
  if (fit && budget < userText.length) userText = userText.slice(0, Math.max(0, budget));
  const messages: ChatMessage[] = [];
  if (systemText.length > 0) messages.push({ role: "system", content: systemText });
  messages.push({ role: "user", content: userText.length > 0 ? userText : EMPTY_USER_TURN });
  return messages;
}
