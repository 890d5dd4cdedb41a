import { z } from "zod";
import { count, nonEmptyString, nonNegativeNumber, policyName, reportedWeights, timeMs, trialArm } from "./common";
import { makeParsers, ProtocolError, schemaTag } from "./errors";

export const TELEMETRY_EVENT_SCHEMA = "meridian.telemetry-event/1";

/** An LB process's telemetry boot id: URL-safe, so it travels in a query string as is. */
export const telemetryBoot = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "expected 1-64 characters of A-Z a-z 0-9 _ -");

// Machine-written objects strip unknown keys (unlike LbConfig) so an LB with an extra field never
// costs the tuner its samples; incompatible changes bump the schema tag instead.
/** One finished (or failed) request as measured at the LB. The tuner scores weights on these. */
export const TelemetryEventSchema = z.object({
  schema: schemaTag(TELEMETRY_EVENT_SCHEMA),
  /** Per LB, starting at 1, gap-free; a resuming subscriber asks for events after the last seq it saw. */
  seq: z.int().min(1),
  time: timeMs,
  lbId: nonEmptyString,
  region: nonEmptyString,
  /** null when no replica was reached (queue timeout, bad request, no candidate). */
  replicaId: nonEmptyString.nullable(),
  configVersion: z.int().nonnegative(),
  policy: policyName,
  weights: reportedWeights.optional(),
  inputTokens: count,
  predictedCachedTokens: count,
  /** From usage.prompt_tokens_details.cached_tokens, in the units of inputTokens (scaled by the LB's
   * estimate over the engine's prompt_tokens, at most inputTokens); null when the replica did not
   * report it. An LB from before that conversion sent the engine's own count. */
  actualCachedTokens: count.nullable(),
  /** null when no content token arrived. */
  ttftMs: nonNegativeNumber.nullable(),
  e2eMs: nonNegativeNumber,
  outputTokens: count,
  /** HTTP status returned to the client. */
  status: z.int().min(100).max(599),
  error: z.string().nullable(),
  forwarded: z.boolean(),
  /** 0 when the request came from a client, 1 when a peer LB forwarded it here. */
  hop: count,
  /** Of a forwarded request (hop 1): the peer LB it entered at, as its peer credential named it, and
   * the policy that LB routed it by (x-meridian-entry-policy). Absent from LBs older than them. */
  entryLbId: z.string().optional(),
  entryPolicy: policyName.optional(),
  sessionKey: z.string().optional(),
  clientRegion: z.string().optional(),
  /** The trial the request was routed under (absent outside a trial) and its arm. */
  trialId: z.string().optional(),
  arm: trialArm.optional(),
  /** Whether the other arm's weights would have chosen another replica for this request. */
  triggered: z.boolean().optional(),
});

export type TelemetryEvent = z.output<typeof TelemetryEventSchema>;

export const TelemetryEventLineSchema = z.object({
  type: z.literal("event"),
  event: TelemetryEventSchema,
});

/** The ring buffer no longer holds events a resuming client asked for; they are gone, say so. */
export const TelemetryDroppedLineSchema = z
  .object({
    type: z.literal("dropped"),
    fromSeq: z.int().min(1),
    toSeq: z.int().min(1),
    count: z.int().min(1),
  })
  .refine((line) => line.fromSeq <= line.toSeq, { path: ["toSeq"], message: "must be >= fromSeq" });

/**
 * Keeps idle streams alive and tells the subscriber the latest seq (0 before the first event). Every
 * subscription opens with one, before any event. `boot` names the LB process whose sequence this is
 * (absent from LBs older than it): seqs begin again at 1 in a new process, so a subscriber resumes
 * with `?since=N&boot=B`, and an LB whose boot is not B serves its own sequence from the start.
 */
export const TelemetryHeartbeatLineSchema = z.object({
  type: z.literal("heartbeat"),
  seq: count,
  time: timeMs,
  boot: telemetryBoot.optional(),
});

/** One line of the NDJSON stream served at GET /admin/telemetry. */
export const TelemetryStreamLineSchema = z.discriminatedUnion("type", [TelemetryEventLineSchema, TelemetryDroppedLineSchema, TelemetryHeartbeatLineSchema]);

export type TelemetryStreamLine = z.output<typeof TelemetryStreamLineSchema>;
export type TelemetryEventLine = z.output<typeof TelemetryEventLineSchema>;
export type TelemetryDroppedLine = z.output<typeof TelemetryDroppedLineSchema>;
export type TelemetryHeartbeatLine = z.output<typeof TelemetryHeartbeatLineSchema>;

const eventParsers = makeParsers(TelemetryEventSchema, "telemetryEvent");
export const parseTelemetryEvent: (input: unknown) => TelemetryEvent = eventParsers.parse;
export const safeParseTelemetryEvent = eventParsers.safeParse;

const lineParsers = makeParsers(TelemetryStreamLineSchema, "telemetryLine");
export const parseTelemetryStreamLine: (input: unknown) => TelemetryStreamLine = lineParsers.parse;
export const safeParseTelemetryStreamLine = lineParsers.safeParse;

/** Parses one NDJSON line of text; a line that is not JSON is reported like any other protocol error. */
export function parseTelemetryNdjsonLine(line: string): TelemetryStreamLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new ProtocolError([{ path: "telemetryLine", message: `not valid JSON (${reason})` }]);
  }
  return parseTelemetryStreamLine(value);
}

/** Serialises one stream line, newline-terminated. */
export function formatTelemetryNdjsonLine(line: TelemetryStreamLine): string {
  return `${JSON.stringify(line)}\n`;
}
