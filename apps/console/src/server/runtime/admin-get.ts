// One bounded GET of an LB's admin API: the status and the body text, the body read whole under the
// same timeout as the headers. It throws on a transport failure (refused, reset, timed out); what a
// status means is the caller's: the challenge, the state probe and the adoption's config read each
// judge their own.
import "server-only";
import { type Dispatcher, request } from "undici";

export async function getText(
  url: string,
  options: { timeoutMs: number; dispatcher?: Dispatcher; headers?: Record<string, string> },
): Promise<{ status: number; text: string }> {
  const res = await request(url, {
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  return { status: res.statusCode, text: await res.body.text() };
}
