// What the simulated engine counts and caches of a request's prompt: its tokens (characters / 4) and
// its block keys, with the same canonical serialisation the LB keys and counts it with
// (@meridian/routing's chat keyer), so the engine's prompt_tokens and cached_tokens answer for the
// prompt the LB predicted for. A chat prompt is what vLLM and SGLang hand the chat template: every
// message as sent (names, tool calls, tool results) and the request's `tools` and `documents`.
import {
  chatBlockKeysWithState,
  chatSerialisedLength,
  continueChatBlockKeys,
  hashString32,
  promptBlockKeys,
  type BlockKey,
  type ChatMessageLike,
  type ChatPromptExtras,
} from "@meridian/routing";
import type { ChatCompletionBody, CompletionBody } from "./openai";

/** Characters per token of the server's prompt-token estimate (the design's chars / 4). */
export const CHARS_PER_TOKEN = 4;

export interface PromptView {
  blockKeys: BlockKey[];
  promptTokens: number;
  seed: number;
  /** Block keys of prompt + reply, as the next turn will present them. */
  completionKeys(reply: string): BlockKey[];
}

export function chatPrompt(body: ChatCompletionBody): PromptView {
  // The messages as sent, not just role and content: an assistant's `tool_calls` and a tool
  // result's `tool_call_id` are in the engine's prompt, and in the LB's keys of it. A message
  // without content (an assistant's tool-call turn) has none to key.
  const messages: ChatMessageLike[] = body.messages.map((message) => ({ ...message, content: message.content ?? null }));
  // What the proxy keys besides the messages (packages/proxy/src/request.ts): the template renders
  // the tools after the system prompt, so a request with another tool set shares only that.
  const extras: ChatPromptExtras = { tools: body["tools"], documents: body["documents"] };
  const { keys: blockKeys, state } = chatBlockKeysWithState(messages, undefined, extras);
  const chars = chatSerialisedLength(messages, extras);
  const last = blockKeys[blockKeys.length - 1];
  return {
    blockKeys,
    promptTokens: Math.max(1, Math.ceil(chars / CHARS_PER_TOKEN)),
    seed: last !== undefined ? (last % 0x100000000) ^ chars : hashString32(JSON.stringify(messages)),
    // Continued from the keyer's state: the tools stay where they were, only the reply is added.
    completionKeys: (reply) => blockKeys.concat(continueChatBlockKeys(state, [{ role: "assistant", content: reply }]).keys),
  };
}

export function textPrompt(body: CompletionBody): PromptView {
  const prompt = typeof body.prompt === "string" ? body.prompt : (body.prompt[0] ?? "");
  const blockKeys = promptBlockKeys(prompt);
  return {
    blockKeys,
    promptTokens: Math.max(1, Math.ceil(prompt.length / CHARS_PER_TOKEN)),
    seed: hashString32(prompt),
    completionKeys: (reply) => promptBlockKeys(prompt + reply),
  };
}
