import { z } from "zod";
import {
  capacitySource,
  count,
  crossRegionMode,
  fraction,
  indexClearReason,
  nonEmptyString,
  nonNegativeNumber,
  policyName,
  replicaState,
  timeMs,
  trial,
  reportedWeights,
} from "./common";
import { makeParsers, schemaTag } from "./errors";

export const LB_STATE_SCHEMA = "meridian.lb-state/1";

export const ReplicaScrapeStateSchema = z.object({
  /** Whether the last scrape of the engine's /metrics succeeded. */
  ok: z.boolean(),
  /** Age of the last successful scrape; null before the first one. */
  ageMs: nonNegativeNumber.nullable(),
  error: z.string().nullable(),
  running: nonNegativeNumber,
  waiting: nonNegativeNumber,
  usedTokens: nonNegativeNumber,
});

/** How well this LB's prefix index matches what the replica's engine holds (@meridian/routing
 * cache-truth.ts), for the console to show at a glance. */
export const ReplicaCacheStateSchema = z.object({
  /** Σmin/Σmax of predicted vs reported cached tokens over the last `windowMs`; null without reports. */
  accuracy: fraction.nullable(),
  windowMs: nonNegativeNumber,
  /** Responses in the window that carried a cached-token count, and those that did not. */
  reports: count,
  unreported: count,
  /** false when no response in the window carried cached tokens (the engine was started without
   * cache reports: vLLM --enable-prompt-tokens-details, SGLang --enable-cache-report); null before any. */
  cachedTokensReported: z.boolean().nullable(),
  predictedTokens: nonNegativeNumber,
  actualTokens: nonNegativeNumber,
  /** KV capacity in tokens in force, and where it came from. */
  capacityTokens: nonNegativeNumber.nullable(),
  /** Unknown to this reader (a value a newer LB added): null, as unknown, rather than a refused state. */
  capacitySource: capacitySource.nullable().catch(null),
  /** The replica's route budget and horizon in the index, and its routes now. */
  budgetBlocks: count.nullable(),
  horizonMs: nonNegativeNumber.nullable(),
  routes: count,
  /** Times this LB cleared the replica's routes, and the last time and why. */
  clears: count,
  lastClearAt: timeMs.nullable(),
  lastClearReason: indexClearReason.nullable().catch(null),
});

export const ReplicaRuntimeStateSchema = z.object({
  id: nonEmptyString,
  url: z.string(),
  region: nonEmptyString,
  model: z.string(),
  state: replicaState,
  healthy: z.boolean(),
  /** EWMA of the health probe; null before the first probe answered. */
  rttMs: nonNegativeNumber.nullable(),
  inFlight: count,
  /** This LB's in-flight prompt tokens on the replica. */
  queuedTokens: nonNegativeNumber,
  /** In-flight prompt tokens peers report for the replica. */
  peerQueuedTokens: nonNegativeNumber,
  full: z.boolean(),
  /** Fraction of this LB's requests that went to the replica. */
  share: fraction,
  requests: count,
  cacheHitRate: fraction.nullable(),
  predictionAccuracy: fraction.nullable(),
  scrape: ReplicaScrapeStateSchema,
  cache: ReplicaCacheStateSchema,
});

export const QueueStateSchema = z.object({
  length: count,
  maxLength: count,
  /** 0 when the queue is empty. */
  oldestWaitMs: nonNegativeNumber,
});

export const IndexStatsSchema = z.object({
  routes: count,
  blocks: count,
  evictions: count,
  hits: count,
  lookups: count,
});

export const TotalsSchema = z.object({
  requests: count,
  errors: count,
  forwarded: count,
  queued: count,
});

export const TelemetryBufferStateSchema = z.object({
  /** 0 before the first event. */
  lastSeq: count,
  bufferSize: count,
});

export const PeerRuntimeStateSchema = z.object({
  id: nonEmptyString,
  region: nonEmptyString,
  healthy: z.boolean(),
  queueLength: count,
  availableReplicas: count,
});

/** What GET /admin/state returns: a snapshot of one LB for the console. */
export const LbStateSchema = z.object({
  schema: schemaTag(LB_STATE_SCHEMA),
  lbId: nonEmptyString,
  region: nonEmptyString,
  configVersion: z.int().nonnegative(),
  policy: policyName,
  weights: reportedWeights,
  /** The tuner trial the LB is splitting its sessions by, if any. Read leniently, as the rest of the
   * state is (a field a newer LB adds is dropped, its weights' too): strict, it made the console
   * refuse that LB's whole state. The config's trial stays strict, so an LB refuses a trial field it
   * does not know. */
  trial: z.object({ ...trial.shape, candidate: reportedWeights }).optional(),
  crossRegion: crossRegionMode,
  startedAt: timeMs,
  replicas: z.array(ReplicaRuntimeStateSchema),
  queue: QueueStateSchema,
  index: IndexStatsSchema,
  totals: TotalsSchema,
  telemetry: TelemetryBufferStateSchema,
  peers: z.array(PeerRuntimeStateSchema),
});

export type LbState = z.output<typeof LbStateSchema>;
export type ReplicaRuntimeState = z.output<typeof ReplicaRuntimeStateSchema>;
export type ReplicaScrapeState = z.output<typeof ReplicaScrapeStateSchema>;
export type ReplicaCacheState = z.output<typeof ReplicaCacheStateSchema>;
export type PeerRuntimeState = z.output<typeof PeerRuntimeStateSchema>;
export type QueueState = z.output<typeof QueueStateSchema>;
export type IndexStats = z.output<typeof IndexStatsSchema>;

const lbStateParsers = makeParsers(LbStateSchema, "lbState");
export const parseLbState: (input: unknown) => LbState = lbStateParsers.parse;
export const safeParseLbState = lbStateParsers.safeParse;
