// Block keyers: turn a request into a chain of block keys, key_k = hash(key_{k-1}, block_k). The
// canonical stream and hash (stream.ts) are shared by the chat, completion-prompt and trace keyers.
// And the session key of a request that names none: a chat's by its preamble and first message
// (session.ts), any other's by its first blocks (sessionKeyFromBlocks).
export {
  ART_CHAT_TOKENS_PER_BLOCK,
  MOONCAKE_TOKENS_PER_BLOCK,
  sessionKeyFromBlocks,
  traceBlockKeys,
} from "./trace";
export { DEFAULT_BLOCK_CHARS, MESSAGE_SEPARATOR, PART_SEPARATOR, ROLE_SEPARATOR, type BlockKeyerState } from "./stream";
export {
  chatBlockKeys,
  chatBlockKeysWithState,
  chatPromptSize,
  chatSerialisedLength,
  continueChatBlockKeys,
  NON_TEXT_PART_CHARS,
  type AssistantToolCall,
  type ChatMessageLike,
  type ChatPreamble,
  type ChatPromptExtras,
} from "./chat";
export { continuePromptBlockKeys, promptBlockKeys, promptBlockKeysWithState } from "./prompt";
export { chatSessionKey } from "./session";
