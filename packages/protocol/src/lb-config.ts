import { z } from "zod";
import { DEFAULT_WEIGHTS, MAX_INDEX_CAPACITY_BLOCKS } from "@meridian/routing/types";
import {
  crossRegionMode,
  durationMs,
  durationMsOrZero,
  engineKind,
  httpUrl,
  headerSafeId,
  nonEmptyString,
  policyName,
  positiveInt,
  replicaState,
  trial,
  weights,
} from "./common";
import { ClientAuthSchema, PeerCredentialHashesSchema } from "./client-auth";
import { makeParsers, schemaTag } from "./errors";

/** Version 2 added the request limits `maxPromptTokens`, `maxJsonDepth`, `clientBodyTimeoutMs` and
 * `firstByteMinMs`. A strict reader of version 1 refuses them, hence the bump; a version-1 document
 * is still read (it is version 2 with those limits at their defaults). */
export const LB_CONFIG_SCHEMA = "meridian.lb-config/2";
const LB_CONFIG_SCHEMA_V1 = "meridian.lb-config/1";

export const DEFAULT_LIMITS = Object.freeze({
  /** 80 KB chat prompts are the design's large case; 8 MiB leaves room for long contexts. */
  maxBodyBytes: 8 * 1024 * 1024,
  queueMaxLength: 256,
  queueMaxWaitMs: 30_000,
  /** SkyLB τ: forward only to a peer whose queue is no longer than this. */
  peerQueueTau: 4,
  connectTimeoutMs: 5_000,
  /** Time to response headers; generous because a saturated engine may hold a request before prefill.
   * It is also the cap of the first-byte deadline (lb-core's deadline.ts). */
  headersTimeoutMs: 120_000,
  /** Max silence between body chunks of a streaming response. */
  bodyTimeoutMs: 300_000,
  maxConnectionsPerReplica: 128,
  /** Prompt tokens (the LB's estimate) above which a request is refused with 400
   * context_length_exceeded before it reaches a replica: 128 Ki tokens, a common context window. */
  maxPromptTokens: 131_072,
  /** Deepest nesting of arrays and objects a request body may have (OpenAI request bodies need < 10;
   * tool and response-format JSON schemas a few more). */
  maxJsonDepth: 64,
  /** Time a client has to send its whole request body once the headers are in; past it, 408. */
  clientBodyTimeoutMs: 30_000,
  /** Floor of the first-byte deadline derived from a request's expected prefill time. */
  firstByteMinMs: 2_000,
});

export const DEFAULT_PROBES = Object.freeze({
  /** 5 s live (the paper probed every 30 s): docs/ARCHITECTURE.md, "Probes and health". */
  rttIntervalMs: 5_000,
  scrapeIntervalMs: 1_000,
  /** Consecutive failed probes before a replica or peer is marked unhealthy. */
  unhealthyAfter: 3,
});

export const DEFAULT_INDEX = Object.freeze({
  /** The routing benchmark indexes 1M blocks. */
  capacityBlocks: 1_000_000,
  /** Routes older than 1 h are forgotten (docs/ARCHITECTURE.md, "The prefix index"). */
  ttlMs: 3_600_000,
});

/** Blocks (64 units of the canonical serialisation, ≈16 tokens) that key a session when a request
 * names none (no `user`, no `x-session-id`). A chat: the first N blocks of its preamble (system prompt,
 * tools, or tools and a leading developer message) and of the first message after the leading system
 * and developer messages, which its turns repeat
 * (routing's chatSessionKey); keyed by the prompt's first N blocks, an app's conversations behind one
 * long system prompt were all one session, and a short first turn changed session at turn 2. A
 * completion or embedding: its first N blocks (the paper's first 256 tokens). */
export const DEFAULT_SESSION_KEY_BLOCKS = 16;

// Every *Ms limit and probe interval runs on a timer (a held request's expiry, undici's timeouts, the
// client body deadline, the probe timers): durationMs bounds it to what a Node timer holds.
export const LimitsSchema = z.strictObject({
  maxBodyBytes: positiveInt.default(DEFAULT_LIMITS.maxBodyBytes),
  queueMaxLength: z.int().nonnegative().default(DEFAULT_LIMITS.queueMaxLength),
  queueMaxWaitMs: durationMsOrZero.default(DEFAULT_LIMITS.queueMaxWaitMs),
  peerQueueTau: z.int().nonnegative().default(DEFAULT_LIMITS.peerQueueTau),
  connectTimeoutMs: durationMs.default(DEFAULT_LIMITS.connectTimeoutMs),
  headersTimeoutMs: durationMs.default(DEFAULT_LIMITS.headersTimeoutMs),
  bodyTimeoutMs: durationMs.default(DEFAULT_LIMITS.bodyTimeoutMs),
  maxConnectionsPerReplica: positiveInt.default(DEFAULT_LIMITS.maxConnectionsPerReplica),
  maxPromptTokens: positiveInt.default(DEFAULT_LIMITS.maxPromptTokens),
  maxJsonDepth: positiveInt.default(DEFAULT_LIMITS.maxJsonDepth),
  clientBodyTimeoutMs: durationMs.default(DEFAULT_LIMITS.clientBodyTimeoutMs),
  firstByteMinMs: durationMs.default(DEFAULT_LIMITS.firstByteMinMs),
});

export const ProbesSchema = z.strictObject({
  rttIntervalMs: durationMs.default(DEFAULT_PROBES.rttIntervalMs),
  scrapeIntervalMs: durationMs.default(DEFAULT_PROBES.scrapeIntervalMs),
  unhealthyAfter: positiveInt.default(DEFAULT_PROBES.unhealthyAfter),
});

// The same limits the LB's PrefixIndex checks (routing's prefix-index-checks.ts): a config the schema
// accepts must build its index, or a push half-applies and the persisted config stops the LB restarting.
// ttlMs: the index takes any positive number, so a positive safe integer always fits.
export const IndexSettingsSchema = z.strictObject({
  capacityBlocks: positiveInt
    .max(MAX_INDEX_CAPACITY_BLOCKS, { error: `must be at most ${MAX_INDEX_CAPACITY_BLOCKS} (2^31 - 1, the prefix index's limit)` })
    .default(DEFAULT_INDEX.capacityBlocks),
  ttlMs: positiveInt.default(DEFAULT_INDEX.ttlMs),
});

export const ReplicaConfigSchema = z.strictObject({
  id: headerSafeId,
  url: httpUrl,
  region: headerSafeId,
  model: nonEmptyString,
  engine: engineKind.default("sglang"),
  state: replicaState.default("enabled"),
  /** Requests this LB may have in flight on the replica; absent = learned from the engine. */
  maxConcurrency: positiveInt.optional(),
  /** KV tokens the engine's prefix cache can hold, which sizes the replica's part of the LB's prefix
   * index; absent = read from the engine's metrics (SGLang max_total_num_tokens, vLLM
   * cache_config_info). 0 = the engine caches nothing. */
  cacheCapacityTokens: z.int().nonnegative().optional(),
});

export const PeerConfigSchema = z.strictObject({
  id: headerSafeId,
  url: httpUrl,
  region: headerSafeId,
  /** SHA-256 (hex) of the peer's read-only credentials: the only bearer this LB accepts from it, and
   * only on GET /admin/peer and on requests it forwards (docs/ARCHITECTURE.md, "LB credentials"). */
  credentialHashes: PeerCredentialHashesSchema.default(() => []),
});

function findDuplicate(ids: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}

// Strict objects: an operator's typo ("weigths") must fail loudly rather than silently fall back to a default.
export const LbConfigSchema = z
  .strictObject({
    schema: schemaTag(LB_CONFIG_SCHEMA, [LB_CONFIG_SCHEMA_V1]),
    /** Config version, assigned by the console, monotonic per LB. Telemetry events carry it back. */
    version: z.int().nonnegative(),
    lbId: headerSafeId,
    region: headerSafeId,
    policy: policyName.default("gorgo"),
    weights: weights.default(() => ({ ...DEFAULT_WEIGHTS })),
    /** A tuner trial: a share of sessions routed with the candidate's weights. Absent: none. */
    trial: trial.optional(),
    crossRegion: crossRegionMode.default("direct"),
    sessionKeyBlocks: positiveInt.default(DEFAULT_SESSION_KEY_BLOCKS),
    replicas: z.array(ReplicaConfigSchema).default(() => []),
    peers: z.array(PeerConfigSchema).default(() => []),
    limits: LimitsSchema.prefault({}),
    probes: ProbesSchema.prefault({}),
    index: IndexSettingsSchema.prefault({}),
    /** Client API keys (hashes only) and whether this LB requires one. */
    clientAuth: ClientAuthSchema.prefault({}),
  })
  .superRefine((config, ctx) => {
    const duplicateReplica = findDuplicate(config.replicas.map((replica) => replica.id));
    if (duplicateReplica !== undefined) {
      const at = config.replicas.findLastIndex((replica) => replica.id === duplicateReplica);
      ctx.addIssue({ code: "custom", path: ["replicas", at, "id"], message: `duplicate replica id "${duplicateReplica}"` });
    }
    const duplicatePeer = findDuplicate(config.peers.map((peer) => peer.id));
    if (duplicatePeer !== undefined) {
      const at = config.peers.findLastIndex((peer) => peer.id === duplicatePeer);
      ctx.addIssue({ code: "custom", path: ["peers", at, "id"], message: `duplicate peer id "${duplicatePeer}"` });
    }
    const selfAt = config.peers.findIndex((peer) => peer.id === config.lbId);
    if (selfAt >= 0) {
      ctx.addIssue({ code: "custom", path: ["peers", selfAt, "id"], message: `an LB cannot be its own peer ("${config.lbId}")` });
    }
  });

export type LbConfig = z.output<typeof LbConfigSchema>;
/** What a sender may write: every defaulted field optional. */
export type LbConfigInput = z.input<typeof LbConfigSchema>;
export type ReplicaConfig = z.output<typeof ReplicaConfigSchema>;
export type PeerConfig = z.output<typeof PeerConfigSchema>;
export type Limits = z.output<typeof LimitsSchema>;
export type Probes = z.output<typeof ProbesSchema>;
export type IndexSettings = z.output<typeof IndexSettingsSchema>;

const lbConfigParsers = makeParsers(LbConfigSchema, "lbConfig");
export const parseLbConfig: (input: unknown) => LbConfig = lbConfigParsers.parse;
export const safeParseLbConfig = lbConfigParsers.safeParse;
