// zod schemas for one raw trace row per format, and the formatting of their errors into the
// one-line `file:line: field: problem` messages the reader reports.
import { z } from "zod";

const timestamp = z.number().nonnegative().finite();
const tokenCount = z.number().int().nonnegative();

export const MooncakeRowSchema = z.object({
  timestamp,
  input_length: tokenCount,
  output_length: tokenCount,
  hash_ids: z.array(z.number().int().nonnegative()),
});

export const ArtChatRowSchema = z.object({
  timestamp,
  input_length: tokenCount,
  output_length: tokenCount,
  // Hex digests; accept integers too so a Mooncake-style ART-Chat export still reads.
  hash_ids: z.array(z.union([z.string().regex(/^[0-9a-fA-F]+$/, "expected hex string"), z.number().int().nonnegative()])),
  body: z.record(z.string(), z.unknown()).optional(),
});

/** First issue of a zod error as `path: problem`, short enough for a one-line report. */
export function describeZodError(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0];
  if (!issue) return "invalid row";
  const path = issue.path.length > 0 ? issue.path.join(".") : "row";
  let problem = issue.message;
  if (issue.code === "invalid_type") {
    // "Invalid input: expected array, received string" → "expected array"; a missing field
    // reads better as "required".
    problem = valueAt(input, issue.path) === undefined ? `required (expected ${issue.expected})` : `expected ${issue.expected}`;
  }
  const more = error.issues.length > 1 ? ` (+${error.issues.length - 1} more)` : "";
  return `${path}: ${problem}${more}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
