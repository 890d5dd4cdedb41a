// The context window (max_model_len, what /v1/models reports) as vLLM enforces it on a request:
// the prompt and the output it may generate have to fit together. The engine model reserves prompt +
// output KV for every request it admits and runs one that is larger than its whole KV alone, every
// other request waiting, with /metrics reporting more than 100 % KV usage; a real engine refuses
// such a request before it is queued, so this server does too.
import { OpenAIError } from "./openai";

/** Where the prompt was in the request, for the error's `param`. */
export type PromptParam = "messages" | "prompt" | "input";

/**
 * The most output tokens a request may generate, or the 400 `context_length_exceeded` vLLM answers
 * with. With `max_tokens` (max_completion_tokens; /v1/completions defaults it to 16) it is refused
 * when prompt + max_tokens exceeds the context, and may generate max_tokens. Without, vLLM sets
 * max_tokens to what the context leaves after the prompt, so the prompt has to leave at least one
 * token, and the reply stops there with finish_reason `length`.
 */
export function outputLimit(promptTokens: number, maxTokens: number | undefined, maxModelLen: number, param: PromptParam): number {
  if (maxTokens === undefined) {
    checkPromptLength(promptTokens, maxModelLen - 1, maxModelLen, param);
    return maxModelLen - promptTokens;
  }
  if (promptTokens + maxTokens > maxModelLen) {
    throw new OpenAIError(
      400,
      `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      param,
      "context_length_exceeded",
    );
  }
  return maxTokens;
}

/** An embedding generates nothing: its input may fill the whole context (vLLM's pooling check). */
export function checkInputLength(promptTokens: number, maxModelLen: number): void {
  checkPromptLength(promptTokens, maxModelLen, maxModelLen, "input");
}

function checkPromptLength(promptTokens: number, allowed: number, maxModelLen: number, param: PromptParam): void {
  if (promptTokens <= allowed) return;
  throw new OpenAIError(
    400,
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens} tokens in the messages. Please reduce the length of the messages.`,
    param,
    "context_length_exceeded",
  );
}
