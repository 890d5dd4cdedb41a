// Completion bookkeeping: what the LB records when a request ends (served, failed or refused), and
// what its prefix index learns and when. The drivers measure (TTFT, E2E, usage) and apply the
// learning; the rules are here:
//   - when the 2xx response starts (a stream's first byte, which is its first token; the headers of a
//     reply that is not streamed), the chosen target learns the prompt's keys (the engine now holds
//     those blocks; for a peer, the peer index learns that the peer holds them). A stream's headers
//     come before its prefill: learned then, a request sharing the prefix would find nothing cached;
//   - at completion of a 2xx response on a replica, the engine's cached-token report corrects the
//     index first (@meridian/routing cache-feedback.ts: trim or extend at the time of the request,
//     the replica's horizon, a zero-cached run clears it), then the index learns the conversation
//     as the next turn will present it: prompt + reply (its text and tool calls) when the reply
//     completes a block, else the prompt again (refreshing its LRU position and TTL: the engine
//     touched those blocks until now).
import { type AssistantToolCall, cachedInLbTokens, usageNumber, type BlockKey, type CacheTruth, type ReportOutcome } from "@meridian/routing";
import type { TelemetryEvent } from "@meridian/protocol";
import { type PeerRecord, type PredictionSums, type ReplicaRecord, sameEndpoint } from "./targets";
import type { Target, Ticket } from "./ticket";

/** A telemetry event without its wire tag and sequence number (the shell's log assigns those). */
export type TelemetryEventBody = Omit<TelemetryEvent, "schema" | "seq">;

/** Which index learns which keys for which target. Apply with LbCore.learn, when the driver chooses
 * (the proxy defers it off the response path; the simulator applies it at once). */
export interface LearnInstruction {
  /** `local`: this LB's replica index. `peer`: the snapshot index of peer LBs. */
  index: "local" | "peer";
  keys: readonly BlockKey[];
  targetId: string;
}

export interface Usage {
  promptTokens: number | null;
  completionTokens: number | null;
  /** usage.prompt_tokens_details.cached_tokens; null when the engine did not report it. */
  cachedTokens: number | null;
}

/** How a request ended, as the driver measured it. */
export interface Outcome {
  /** HTTP status returned to the client. */
  status: number;
  error: string | null;
  usage: Usage | null;
  /** The reply's text (empty when unknown or none). */
  reply: string;
  /** The tool calls the reply made (absent or empty when none or unknown): an agent's turn is often
   * tool calls alone, which its next request sends back as the assistant message. */
  toolCalls?: readonly AssistantToolCall[];
  /** Content events seen on a stream (the output-token count when usage is absent). */
  outputEvents: number;
  /** Arrival to the first content token; null when none arrived. */
  ttftMs: number | null;
  e2eMs: number;
}

/** The outcome with each usage count an engine could not legitimately send (not a finite number
 * >= 0) taken as unreported: one bad reply must not push the index's accuracy, the token estimate or
 * a telemetry event out of range (the console rejects such an event and such a state). */
export function withValidUsage(outcome: Outcome): Outcome {
  const usage = outcome.usage;
  if (usage === null) return outcome;
  const valid = {
    promptTokens: usageNumber(usage.promptTokens),
    completionTokens: usageNumber(usage.completionTokens),
    cachedTokens: usageNumber(usage.cachedTokens),
  };
  const same = valid.promptTokens === usage.promptTokens && valid.completionTokens === usage.completionTokens && valid.cachedTokens === usage.cachedTokens;
  return same ? outcome : { ...outcome, usage: valid };
}

export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The replica record the ticket's dispatch was booked on, when it is still the configured one; null
 * when a config removed the replica or changed its URL since (a new record, a new engine: what the
 * old engine answers says nothing about the new one, whose part of the index starts empty). */
function configuredReplica(ticket: Ticket<unknown>, replicas: ReadonlyMap<string, ReplicaRecord>): ReplicaRecord | null {
  const booked = ticket.target?.kind === "replica" ? ticket.target.record : null;
  return booked !== null && replicas.get(booked.id) === booked ? booked : null;
}

/** What the index learns when the response starts (headersReceived, lb-core.ts): nothing for a target
 * the config removed (or, for a replica, re-pointed at a new URL) while the request was in flight. */
export function headersLearning(
  ticket: Ticket<unknown>,
  status: number,
  replicas: ReadonlyMap<string, ReplicaRecord>,
  peers: ReadonlyMap<string, unknown>,
): LearnInstruction | null {
  const target = ticket.target;
  if (!target || !isSuccess(status) || ticket.view.keys.length === 0) return null;
  const configured = target.kind === "replica" ? configuredReplica(ticket, replicas) !== null : peers.has(target.id);
  if (!configured) return null;
  return { index: target.kind === "replica" ? "local" : "peer", keys: ticket.view.keys, targetId: target.id };
}

export interface CompletionContext {
  lbId: string;
  region: string;
  /** The configured replicas: the ticket's record counts only while it is still one of them. */
  replicas: ReadonlyMap<string, ReplicaRecord>;
  /** The configured peers: a forward's answer teaches the one now configured for its URL. */
  peers: ReadonlyMap<string, PeerRecord>;
  /** LB-wide prediction sums (the accuracy metric). */
  lbPrediction: PredictionSums;
  /** The cache model the report feeds, and the time it arrived. */
  truth: CacheTruth;
  now: number;
}

/** What the core returns when a request ends. The telemetry event is built on demand: the proxy logs
 * every one, the simulator only feeds its tuner. */
export class Completion {
  constructor(
    private readonly ticket: Ticket<unknown>,
    readonly outcome: Outcome,
    private readonly lbId: string,
    private readonly region: string,
    /** Next-turn learning, or null. */
    readonly learn: LearnInstruction | null,
    /** Predicted vs reported cached tokens, both in the LB's token units (cachedInLbTokens), when
     * the replica reported them (for metrics). */
    readonly prediction: { predicted: number; actual: number } | null,
    /** What the cached-token feedback did (null when the request was not served by a replica). */
    readonly cacheReport: ReportOutcome | null = null,
  ) {}

  /** The target as metrics label it: a replica id, `peer:<id>`, or `none`. */
  get targetLabel(): string {
    const target = this.ticket.target;
    return target ? (target.kind === "peer" ? `peer:${target.id}` : target.id) : "none";
  }

  telemetry(): TelemetryEventBody {
    const { ticket, outcome } = this;
    const target = ticket.target;
    const cached = outcome.usage?.cachedTokens ?? null;
    return {
      time: ticket.arrivalMs,
      lbId: this.lbId,
      region: this.region,
      replicaId: target?.kind === "replica" ? target.id : null,
      configVersion: ticket.configVersion,
      policy: ticket.policy,
      weights: ticket.weights,
      inputTokens: Math.round(ticket.view.inputTokens),
      predictedCachedTokens: Math.round(target?.predictedCachedTokens ?? 0),
      // In the units of inputTokens and predictedCachedTokens, so the console's hit rate and accuracy
      // divide like by like (the engine's count over the LB's estimate read 128 %).
      actualCachedTokens: cached === null ? null : Math.round(cachedInLbTokens(ticket.view.inputTokens, cached, outcome.usage?.promptTokens ?? null)),
      ttftMs: outcome.ttftMs,
      e2eMs: outcome.e2eMs,
      outputTokens: outcome.usage?.completionTokens ?? outcome.outputEvents,
      status: outcome.status,
      error: outcome.error,
      forwarded: target?.kind === "peer",
      hop: ticket.hop,
      ...(ticket.entry !== null ? { entryLbId: ticket.entry.lbId, ...(ticket.entry.policy !== undefined ? { entryPolicy: ticket.entry.policy } : {}) } : {}),
      sessionKey: ticket.view.sessionKey,
      clientRegion: ticket.view.clientRegion,
      ...(ticket.trial !== null
        ? { trialId: ticket.trial.id, arm: ticket.trial.arm, ...(ticket.trial.triggered !== null ? { triggered: ticket.trial.triggered } : {}) }
        : {}),
    };
  }
}

/** Records a finished request on the replica and returns its completion (next-turn learning, accuracy). */
export function completeTicket(ctx: CompletionContext, ticket: Ticket<unknown>, outcome: Outcome): Completion {
  const target = ticket.target;
  const replica = configuredReplica(ticket, ctx.replicas);
  const ok = isSuccess(outcome.status);
  const usage = outcome.usage;
  if (replica && ok) replica.requests++;
  const cached = usage?.cachedTokens ?? null;
  if (replica && usage?.promptTokens != null && cached !== null) {
    replica.cacheReports.promptTokens += usage.promptTokens;
    replica.cacheReports.cachedTokens += cached;
  }
  let prediction: Completion["prediction"] = null;
  if (replica && cached !== null) {
    const predicted = target?.predictedCachedTokens ?? 0;
    // The prediction is in the LB's estimated tokens: the report is compared in them too.
    const actual = cachedInLbTokens(ticket.view.inputTokens, cached, usage?.promptTokens ?? null);
    replica.prediction.add(predicted, actual);
    ctx.lbPrediction.add(predicted, actual);
    prediction = { predicted, actual };
  }
  if (ok && cached !== null && target?.kind === "peer") learnForwardPrefill(target, ctx.peers, ticket.view.inputTokens, cached, usage?.promptTokens ?? null);
  // Only a served response says what the engine held: a failure's missing usage is not a missing report.
  const snapshot = target?.snapshot ?? null;
  const cacheReport = replica && ok && snapshot !== null ? ctx.truth.report(snapshot, usage, ctx.now) : null;
  let learn: LearnInstruction | null = null;
  if (replica && ok) {
    const toolCalls = outcome.toolCalls ?? [];
    const replied = outcome.reply.length > 0 || toolCalls.length > 0;
    const keys = (replied ? ticket.nextTurnKeys?.(outcome.reply, toolCalls) : null) ?? ticket.view.keys;
    if (keys.length > 0) learn = { index: "local", keys, targetId: replica.id };
  }
  return new Completion(ticket, outcome, ctx.lbId, ctx.region, learn, prediction, cacheReport);
}

/** A forward's answer says how much of its prompt the peer held: the peer's prefill rate is learned
 * per token it did not hold, from the first byte the forward got (deadline.ts), so its cache hits do
 * not make it look faster than it is for a prompt it does not hold. */
function learnForwardPrefill(target: Target, peers: ReadonlyMap<string, PeerRecord>, inputTokens: number, cached: number, promptTokens: number | null): void {
  // The record configured now, when it stands for the LB the forward went to (one removed and put
  // back under its URL meanwhile, as a failover flap does, is that LB): a discarded one teaches no one.
  const peer = peers.get(target.id);
  if (target.peer === null || target.firstByteMs === null || peer === undefined || !sameEndpoint(target.peer, peer)) return;
  const uncached = Math.max(0, inputTokens - cachedInLbTokens(inputTokens, cached, promptTokens));
  peer.firstByte.observeFirstByte(uncached, target.firstByteMs, peer.rtt.ms ?? 0);
}
