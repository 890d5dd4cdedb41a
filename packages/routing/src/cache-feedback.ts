// The cache-report feedback: what the prefix index learns from the cached-token count an engine
// reports for a request (usage.prompt_tokens_details.cached_tokens). An engine reports exactly the
// prompt prefix it held when it admitted the request, so each report is a measurement of one
// replica's cache at the time of that request.
//
//   lower than predicted  the replica had lost blocks [reported, ...): its routes for them go, except
//                         routes learned after the request was dispatched (a newer request put
//                         them back; the engine holds them again).
//   higher than predicted the replica held a prefix the index had forgotten or never saw (another
//                         LB's traffic): the index learns it.
//   the horizon           each report also brackets how long the replica keeps a block. An LRU
//                         cache under steady load behaves like a cache that keeps each block for a
//                         characteristic time (Che's approximation), whatever its size and however
//                         many LBs feed it. The deepest block the engine still held was that old at
//                         dispatch, so the horizon is at least its age; the first block it had lost
//                         was that old, so the horizon is at most its age. When the current horizon
//                         falls outside that bracket it moves to the violated end. Ages come from the
//                         index's own learn times at dispatch (DispatchSnapshot.profile), so a chain
//                         re-learned by later requests still yields the ages it had for this one.
//                         A report only counts as age evidence when its lost block is OLDER than its
//                         last held one: a cut inside one learn (an engine's page rounding, a flush)
//                         says nothing about time. A report within the rounding slack (as-predicted)
//                         brackets at the predicted depth: it does not say the predicted blocks were lost.
//   a lost cache          an LRU cache under load does not start evicting blocks four times younger
//                         than it kept a moment ago: a report whose lost block is younger than a
//                         quarter of what the index believed the replica keeps (its horizon, or
//                         without one its oldest route's age) says the cache was emptied (SGLang /flush_cache, a
//                         reset, a restart the metrics missed). CacheTruth then clears the replica.
//                         On the simulated conversation trace, normal horizon drops stay above 0.57 of
//                         the horizon before; a flush drops it to a few percent.
//
// Reports are judged against the LB index's own prediction for the chosen replica (its horizon
// applied), not the decision's: a peer policy (sglang-cache-aware, dynamo-kv, llm-d) or the
// simulator's oracle predicts from its own state, and a miss that only that state expected says
// nothing about the index (judged so, three of them cleared the replica as a lost cache). The
// decision's prediction stays the one the accuracy figures measure (DispatchSnapshot.decisionTokens).
//
// Reports are compared in the LB's token units: when the engine's usage.prompt_tokens differs from
// the LB's estimate (chat text: characters per token is estimated), the cached count is scaled by
// the ratio. A one-block difference is tolerated as rounding unless the driver says the reports are
// exact (RequestView.exactCachedReports: the simulator's engines over trace hash ids) and the counts
// agree. A real engine never reports a prompt's last token as cached (vLLM and SGLang compute at
// least one), so a full hit on a page-aligned prompt reads one block short whether or not the
// estimate happens to equal prompt_tokens: token-exact keys are not enough (a token-id prompt's full
// hit read "lower", and a few of them cleared the replica as a lost cache).
//
// Bad or missing usage fields (absent, null, NaN, negative, not a number) change nothing and raise
// nothing: the verdict is `unreported`.

import { cachedTokensOf } from "./policies/common";
import type { HoldingProfile, PrefixIndex } from "./prefix-index";
import type { BlockKey, Decision, RequestView } from "./types";
import { usageNumber } from "./usage";

/** The index's view of a request at dispatch, kept until its cached-token report arrives. */
export interface DispatchSnapshot {
  replicaId: string;
  keys: readonly BlockKey[];
  /** Blocks the LB's index credited the chosen replica with (its horizon applied): what the report is
   * judged against. */
  predictedBlocks: number;
  /** The same in tokens, capped at the input. */
  predictedTokens: number;
  /** Cached tokens the decision predicted on the chosen replica (the policy's own state, or the
   * simulator's oracle, may differ from the index): what the accuracy figures measure. */
  decisionTokens: number;
  /** The replica's chain as the index held it at dispatch, horizon ignored. */
  profile: HoldingProfile;
  dispatchedAt: number;
  /** The LB's estimate of the prompt's tokens, and the tokens one key stands for. */
  inputTokens: number;
  tokensPerBlock: number;
  /** RequestView.exactCachedReports: no page-rounding slack when the counts agree. */
  exactReports: boolean;
  /** How long the index believed the replica keeps a block: its horizon, or, without one, the age
   * of its oldest route (everything it holds is believed held); null when it holds nothing. */
  keepMs: number | null;
}

/** The engine's usage fields as received; anything may be missing or malformed. */
export interface CachedTokensReport {
  cachedTokens: unknown;
  promptTokens?: unknown;
}

export type ReportVerdict = "unreported" | "as-predicted" | "lower" | "higher";

export interface FeedbackResult {
  verdict: ReportVerdict;
  predictedBlocks: number;
  /** The report converted to leading blocks of the prompt; null when unreported. */
  reportedBlocks: number | null;
  /** The report in the LB's token units (capped at the input); null when unreported. */
  reportedTokens: number | null;
  /** Routes dropped (lower) and routes learned (higher). */
  trimmed: number;
  learned: number;
  /** The replica's horizon after the report, null when it has none. */
  horizonMs: number | null;
  /** The engine lost blocks far younger than it was believed to keep: its cache was emptied. */
  cacheLost: boolean;
}

/** A lost block younger than this fraction of what the replica was believed to keep means a lost
 * cache rather than LRU turnover (see the file header). */
export const CACHE_LOSS_RATIO = 0.25;

/** Captures what the feedback will need, right after the policy chose (before anything re-learns). */
export function captureDispatch(index: PrefixIndex, request: RequestView, decision: Decision, now: number): DispatchSnapshot {
  const view = index.replicaView(decision.choice);
  const keep = view.horizonMs ?? (view.oldestLearnedAt === null ? Infinity : now - view.oldestLearnedAt);
  const predictedBlocks = index.heldBlocks(request.keys, decision.choice, now);
  return {
    replicaId: decision.choice,
    keys: request.keys,
    predictedBlocks,
    predictedTokens: cachedTokensOf(predictedBlocks, request),
    decisionTokens: decision.predictedCachedTokens,
    profile: index.holdingProfile(request.keys, decision.choice, now),
    dispatchedAt: now,
    inputTokens: request.inputTokens,
    tokensPerBlock: request.tokensPerBlock,
    exactReports: request.exactCachedReports === true,
    keepMs: Number.isFinite(keep) ? keep : null,
  };
}

/** Whether the engine counted the prompt as the LB did (or did not say): no scaling then. */
function sameCount(inputTokens: number, promptTokens: number | null): boolean {
  return promptTokens === null || promptTokens === 0 || Math.abs(promptTokens - inputTokens) < 0.5;
}

/**
 * An engine's cached-token count in the LB's token units: scaled by the LB's estimate over the
 * engine's prompt_tokens when they differ, capped at the estimate. Every figure that sets a report
 * beside a prediction or an input estimate (the rolling and lifetime accuracy, hit rates, telemetry)
 * converts it this way: mixed, an exact prediction read 0.75 at 3 characters per token.
 */
export function cachedInLbTokens(inputTokens: number, cachedTokens: number, promptTokens: number | null): number {
  const scale = sameCount(inputTokens, promptTokens) ? 1 : inputTokens / (promptTokens as number);
  return Math.min(cachedTokens * scale, inputTokens);
}

/** The engine's cached count in the LB's token units, and the rounding tolerance in blocks. */
function readReport(snap: DispatchSnapshot, report: CachedTokensReport): { tokens: number; slackBlocks: number } | null {
  const cached = usageNumber(report?.cachedTokens);
  if (cached === null) return null;
  const prompt = usageNumber(report.promptTokens);
  const tokens = cachedInLbTokens(snap.inputTokens, cached, prompt);
  return { tokens, slackBlocks: snap.exactReports && sameCount(snap.inputTokens, prompt) ? 0 : 1 };
}

/** Leading blocks of the prompt a report covers: all keys when it covers the whole prompt (the last
 * key may stand for a partial block), else the whole blocks it covers. */
function reportedDepth(snap: DispatchSnapshot, tokens: number, slackBlocks: number): number {
  const n = snap.keys.length;
  const tpb = snap.tokensPerBlock;
  if (tokens >= snap.inputTokens - slackBlocks * tpb) return n;
  return Math.min(n, Math.floor(tokens / tpb + 1e-9));
}

/** Learn time of the block at `depth` (0-based) in a profile; undefined beyond its depth. */
function learnedAtDepth(profile: HoldingProfile, depth: number): number | undefined {
  if (depth < 0 || depth >= profile.depth) return undefined;
  for (const run of profile.runs) if (depth < run.end) return run.learnedAt;
  return undefined;
}

/**
 * The horizon bracket one report gives, in ms of age at dispatch: (heldAge, lostAge]. heldAge is
 * the age of the deepest block the engine still held that the index also held; lostAge the age of
 * the first block the index held that the engine had lost. Null when the report carries no age
 * evidence (see the file header).
 */
export function horizonBracket(snap: DispatchSnapshot, reportedBlocks: number): { heldAge: number; lostAge: number } | null {
  const p = snap.profile;
  const heldDepth = Math.min(reportedBlocks, p.depth);
  const heldAt = learnedAtDepth(p, heldDepth - 1);
  const lostAt = reportedBlocks < p.depth ? learnedAtDepth(p, reportedBlocks) : undefined;
  const heldAge = heldAt === undefined ? -Infinity : snap.dispatchedAt - heldAt;
  const lostAge = lostAt === undefined ? Infinity : snap.dispatchedAt - lostAt;
  if (heldAge === -Infinity && lostAge === Infinity) return null;
  if (!(lostAge > heldAge)) return null;
  return { heldAge, lostAge };
}

/** Moves `current` (null = unbounded) into the bracket (heldAge, lostAge] when it lies outside. */
export function nextHorizon(current: number | null, bracket: { heldAge: number; lostAge: number } | null): number | null {
  if (bracket === null) return current;
  const now = current ?? Infinity;
  if (now > bracket.lostAge) return Math.max(0, bracket.lostAge);
  if (now < bracket.heldAge) return bracket.heldAge === Infinity ? null : bracket.heldAge;
  return current;
}

/**
 * Applies one cached-token report to the index (see the file header). Never throws on usage fields.
 * `stale`: the request was dispatched before the replica's part of the index was cleared, so the
 * report describes a cache that is gone: it is judged (for accuracy) but changes nothing.
 */
export function applyCacheReport(index: PrefixIndex, snap: DispatchSnapshot, report: CachedTokensReport, now: number, stale = false): FeedbackResult {
  const view = index.replicaView(snap.replicaId);
  const unreported: FeedbackResult = {
    verdict: "unreported",
    predictedBlocks: snap.predictedBlocks,
    reportedBlocks: null,
    reportedTokens: null,
    trimmed: 0,
    learned: 0,
    horizonMs: view.horizonMs,
    cacheLost: false,
  };
  const read = readReport(snap, report);
  if (read === null) return unreported;
  const reportedBlocks = reportedDepth(snap, read.tokens, read.slackBlocks);
  const predicted = snap.predictedBlocks;
  let verdict: ReportVerdict = "as-predicted";
  if (reportedBlocks < predicted - read.slackBlocks) verdict = "lower";
  else if (reportedBlocks > predicted + read.slackBlocks) verdict = "higher";

  let trimmed = 0;
  let learned = 0;
  if (stale)
    return { verdict, predictedBlocks: predicted, reportedBlocks, reportedTokens: read.tokens, trimmed, learned, horizonMs: view.horizonMs, cacheLost: false };
  if (verdict === "lower") {
    trimmed = index.forget(snap.keys, snap.replicaId, reportedBlocks, snap.dispatchedAt);
  } else if (verdict === "higher") {
    const prefix = reportedBlocks === snap.keys.length ? snap.keys : snap.keys.slice(0, reportedBlocks);
    index.learn(prefix, snap.replicaId, "LOCAL", now);
    learned = reportedBlocks;
  }
  // Within the rounding slack the report is consistent with the prediction: it brackets the horizon as
  // the prediction would (one block short by an engine's page alignment is no sign that block aged out).
  const bracket = horizonBracket(snap, verdict === "as-predicted" ? predicted : reportedBlocks);
  const horizon = nextHorizon(view.horizonMs, bracket);
  if (horizon !== view.horizonMs) index.setReplicaHorizon(snap.replicaId, horizon);
  const cacheLost = verdict === "lower" && bracket !== null && snap.keepMs !== null && bracket.lostAge < snap.keepMs * CACHE_LOSS_RATIO;
  return { verdict, predictedBlocks: predicted, reportedBlocks, reportedTokens: read.tokens, trimmed, learned, horizonMs: horizon, cacheLost };
}
