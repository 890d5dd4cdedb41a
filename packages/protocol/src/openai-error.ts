import { z } from "zod";
import { makeParsers } from "./errors";

/** The error types Meridian emits, with the HTTP status each normally goes with. */
export const OPENAI_ERROR_STATUS = Object.freeze({
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  server_error: 500,
});
export type OpenAiErrorType = keyof typeof OPENAI_ERROR_STATUS;
export const OPENAI_ERROR_TYPES = Object.keys(OPENAI_ERROR_STATUS) as OpenAiErrorType[];

/**
 * `{"error":{"message","type","code","param"}}`. Carries no schema tag: the shape is OpenAI's, and
 * clients parse it with OpenAI SDKs. Parsing is lenient about `type` and `code` because upstream
 * engines differ: OpenAI sends string codes (`"model_not_found"`), vLLM sends the HTTP status as a
 * number (`"code": 400`), and `param` is often null or absent.
 */
export const OpenAiErrorSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    code: z.union([z.string(), z.number()]).nullable(),
    param: z.string().nullable().optional(),
  }),
});
export type OpenAiError = z.output<typeof OpenAiErrorSchema>;

/** Builds the body Meridian sends. `param` is always present (null when not about one parameter), as OpenAI does. */
export function openAiError(
  message: string,
  type: OpenAiErrorType,
  code: string,
  param?: string | null,
): { error: { message: string; type: OpenAiErrorType; code: string; param: string | null } } {
  return { error: { message, type, code, param: param ?? null } };
}

const openAiErrorParsers = makeParsers(OpenAiErrorSchema, "openAiError");
export const parseOpenAiError: (input: unknown) => OpenAiError = openAiErrorParsers.parse;
export const safeParseOpenAiError = openAiErrorParsers.safeParse;
