// The OpenAI wire format as the simulated engine speaks it: request validation (zod) with errors shaped
// like OpenAI's own (shared/fixtures/error-*.json), and the response objects of chat and text
// completions, streamed (shared/fixtures/sse-openai-gpt5nano-include-usage.txt) or not
// (shared/fixtures/completion-*.json).
import { z } from "zod";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error the server answers with `status` and an OpenAI error body. */
export class OpenAIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = "invalid_request_error",
  ) {
    super(message);
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const Message = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
});
const maxTokens = z.number().int().min(1).nullable().optional();
const common = {
  model: z.string().optional(),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  n: z.literal(1).nullable().optional(),
};

export const ChatCompletionBody = z.looseObject({ messages: z.array(Message).min(1), ...common });
export const CompletionBody = z.looseObject({
  // Batched prompts and token-id prompts are not simulated: one text prompt per request.
  prompt: z.union([z.string(), z.array(z.string()).length(1)]),
  ...common,
});
export type ChatCompletionBody = z.infer<typeof ChatCompletionBody>;
export type CompletionBody = z.infer<typeof CompletionBody>;

function formatPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) text += typeof part === "number" ? `[${part}]` : text === "" ? String(part) : `.${String(part)}`;
  return text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const part of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "number" && Number.isInteger(value) ? "integer" : typeof value;
}

/** Turns the first zod issue into the error OpenAI itself returns for that mistake. */
function toOpenAIError(error: z.ZodError, body: unknown): OpenAIError {
  const issue = error.issues[0];
  if (issue === undefined) return new OpenAIError(400, "Invalid request body.");
  const param = formatPath(issue.path);
  const value = valueAt(body, issue.path);
  switch (issue.code) {
    case "invalid_type":
      if (value === undefined) return new OpenAIError(400, `Missing required parameter: '${param}'.`, param, "missing_required_parameter");
      return new OpenAIError(
        400,
        `Invalid type for '${param}': expected ${issue.expected === "int" ? "an integer" : `a ${issue.expected}`}, but got ${typeName(value)} instead.`,
        param,
        "invalid_type",
      );
    case "too_small":
      if (issue.origin === "array") {
        return new OpenAIError(
          400,
          `Invalid '${param}': empty array. Expected an array with minimum length ${String(issue.minimum)}, but got an empty array instead.`,
          param,
          "empty_array",
        );
      }
      return new OpenAIError(
        400,
        `Invalid '${param}': integer below minimum value. Expected a value >= ${String(issue.minimum)}, but got ${String(value)} instead.`,
        param,
        "integer_below_min_value",
      );
    case "invalid_union":
      return new OpenAIError(400, `Invalid type for '${param}': got ${typeName(value)}.`, param, "invalid_type");
    case "invalid_value":
      return new OpenAIError(400, `Invalid value for '${param}': ${JSON.stringify(value) ?? "undefined"}.`, param, "invalid_value");
    default:
      return new OpenAIError(400, `Invalid '${param}': ${issue.message}.`, param || null, "invalid_value");
  }
}

/** Parses a JSON body against a schema, throwing the OpenAIError the API would answer with. */
export function parseBody<T>(schema: z.ZodType<T>, raw: string): T {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new OpenAIError(
      400,
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
    );
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new OpenAIError(400, "The request body must be a JSON object.", null, "invalid_type");
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw toOpenAIError(parsed.error, body);
  return parsed.data;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usage(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** Fields every response object of one request shares. */
export interface ResponseHeader {
  id: string;
  created: number;
  model: string;
}

export type FinishReason = "stop" | "length";

/** Builds the chunks of one streamed response, chat or text completion. */
export class ChunkWriter {
  constructor(
    private readonly kind: "chat" | "text",
    private readonly header: ResponseHeader,
    /** With stream_options.include_usage OpenAI adds `usage: null` to every chunk before the usage chunk. */
    private readonly includeUsage: boolean,
  ) {}

  /** The opening chunk: the assistant role with empty content (chat only; text completions have none). */
  opening(): string | null {
    if (this.kind === "text") return null;
    return this.frame({ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null });
  }

  content(text: string): string {
    return this.kind === "chat"
      ? this.frame({ index: 0, delta: { content: text }, logprobs: null, finish_reason: null })
      : this.frame({ index: 0, text, logprobs: null, finish_reason: null });
  }

  finish(reason: FinishReason): string {
    return this.kind === "chat"
      ? this.frame({ index: 0, delta: {}, logprobs: null, finish_reason: reason })
      : this.frame({ index: 0, text: "", logprobs: null, finish_reason: reason });
  }

  usage(value: Usage): string {
    return sseData({ ...this.base(), choices: [], usage: value });
  }

  done(): string {
    return "data: [DONE]\n\n";
  }

  private frame(choice: Record<string, unknown>): string {
    const chunk: Record<string, unknown> = { ...this.base(), choices: [choice] };
    if (this.includeUsage) chunk.usage = null;
    return sseData(chunk);
  }

  private base(): Record<string, unknown> {
    return {
      id: this.header.id,
      object: this.kind === "chat" ? "chat.completion.chunk" : "text_completion",
      created: this.header.created,
      model: this.header.model,
      system_fingerprint: null,
    };
  }
}

function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export function chatCompletion(header: ResponseHeader, content: string, reason: FinishReason, value: Usage): unknown {
  return {
    id: header.id,
    object: "chat.completion",
    created: header.created,
    model: header.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: reason,
      },
    ],
    usage: value,
    system_fingerprint: null,
  };
}

export function textCompletion(header: ResponseHeader, text: string, reason: FinishReason, value: Usage): unknown {
  return {
    id: header.id,
    object: "text_completion",
    created: header.created,
    model: header.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: reason }],
    usage: value,
    system_fingerprint: null,
  };
}
