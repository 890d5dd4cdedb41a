// OpenAI-shaped error responses ({"error":{"message","type","code"}}), so that OpenAI SDK clients
// surface the LB's own refusals exactly as they surface the API's.
import type { ServerResponse } from "node:http";
import type { Failure } from "@meridian/lb-core";
import { openAiError, type OpenAiErrorType } from "@meridian/protocol";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: OpenAiErrorType,
    readonly code: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param: string | null = null, code = "invalid_request"): HttpError =>
  new HttpError(400, message, "invalid_request_error", code, param);
// OpenAI answers an unknown model with type invalid_request_error, code model_not_found; unknown
// routes get not_found_error.
export const notFound = (message: string, code = "not_found", type: OpenAiErrorType = "not_found_error"): HttpError => new HttpError(404, message, type, code);
const unavailable = (message: string, retryAfterSeconds: number, code = "no_capacity", status = 503): HttpError =>
  new HttpError(status, message, "server_error", code, null, { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) });

/** The HTTP answer for a refusal the LB core decided. */
export function httpErrorOf(failure: Failure): HttpError {
  if (failure.retryAfterSeconds !== null) return unavailable(failure.message, failure.retryAfterSeconds, failure.code, failure.status);
  return new HttpError(failure.status, failure.message, failure.type, failure.code, failure.param);
}

function errorBody(error: HttpError): string {
  return JSON.stringify(openAiError(error.message, error.type, error.code, error.param));
}

/** Writes an error unless headers already went out (then the only honest signal is to cut the stream). */
export function sendError(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorBody(error);
  res.writeHead(error.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}
