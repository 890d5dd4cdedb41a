// The completion-prompt keyer: a /v1/completions prompt's raw text as chained block keys, and its
// continuation with appended text from a keyer state.
import { RoutingInputError, describe } from "../errors";
import type { BlockKey } from "../types";
import { CanonicalStream, CHAIN_ORIGIN, checkBlockChars, checkState, DEFAULT_BLOCK_CHARS, keyerState, type BlockKeyerState } from "./stream";

/** Chained keys of a /v1/completions prompt: the raw text, full blocks only. */
export function promptBlockKeys(prompt: string, blockChars = DEFAULT_BLOCK_CHARS): BlockKey[] {
  return promptBlockKeysWithState(prompt, blockChars).keys;
}

/** promptBlockKeys plus the state continuePromptBlockKeys needs to key appended text. */
export function promptBlockKeysWithState(prompt: string, blockChars = DEFAULT_BLOCK_CHARS): { keys: BlockKey[]; state: BlockKeyerState } {
  checkBlockChars(blockChars);
  if (typeof prompt !== "string") throw new RoutingInputError("prompt", `must be a string, got ${describe(prompt)}`);
  const chainer = new CanonicalStream(blockChars);
  chainer.write(prompt);
  const keys = chainer.keys();
  return { keys, state: keyerState("prompt", blockChars, keys, chainer, CHAIN_ORIGIN, 0, 0) };
}

/**
 * Keys of the blocks `appended` completes after a prompt keyed into `state`. The raw prompt is one
 * piece, so this equals promptBlockKeys(prompt + appended).slice(state.blocks) except where the
 * join itself pairs a lone high surrogate with a lone low one (per-piece UTF-8 keeps them apart).
 */
export function continuePromptBlockKeys(state: BlockKeyerState, appended: string): { keys: BlockKey[]; state: BlockKeyerState } {
  checkState(state, "prompt");
  if (typeof appended !== "string") throw new RoutingInputError("appended", `must be a string, got ${describe(appended)}`);
  const chainer = new CanonicalStream(state.blockChars);
  for (const piece of state.tail) chainer.write(piece);
  chainer.write(appended);
  const keys = chainer.keys(state.lastKey);
  return { keys, state: keyerState("prompt", state.blockChars, keys, chainer, state.lastKey, state.blocks, 0) };
}
