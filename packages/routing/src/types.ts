// The routing contract shared by the proxy (live), the simulator (virtual time) and the console.
// Everything in packages/routing is pure: no I/O, no timers, no Date.now(). Time is always passed in
// as `now` (milliseconds on the caller's clock: wall clock in the proxy, virtual clock in the sim).

/** A chained block key: key_k = hash(key_{k-1}, block_k). An unsigned integer < 2^53, so it is exact
 * as a JS number, cheap as a Map key, and survives JSON (peer snapshots, telemetry). */
export type BlockKey = number;

/** LOCAL: learned from this LB's own traffic. REMOTE: learned from a peer's snapshot. */
export type Trust = "LOCAL" | "REMOTE";

export const POLICY_NAMES = [
  "gorgo",
  "least-load",
  "least-request",
  "prefix-cache",
  "session-affinity",
  "consistent-hash",
  "round-robin",
  "random",
  "skylb",
  "learned-prefix",
  // The routers operators would pick instead (packages/routing/README.md, "Peer policies").
  "sglang-cache-aware",
  "llm-d",
  "dynamo-kv",
] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

// The vocabulary every layer shares (wire schemas, database columns, console forms, simulator specs)
// is declared here once, as const arrays; zod enums and column enums are built from these.

/** `direct`: every replica of every region is a candidate and the cost's RTT term decides.
 * `via-peer`: local replicas only; when all are full, forward to a peer LB (SkyLB, one hop). */
export const CROSS_REGION_MODES = ["direct", "via-peer"] as const;
export type CrossRegionMode = (typeof CROSS_REGION_MODES)[number];

/** A replica's operator-set state: only `enabled` replicas take new requests. */
export const REPLICA_STATES = ["enabled", "disabled", "draining"] as const;
export type ReplicaStateName = (typeof REPLICA_STATES)[number];

/** Engine kinds, which are also the /metrics dialects the LB reads (sglang:* or vllm:* names). */
export const ENGINE_KINDS = ["sglang", "vllm"] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/** Where a replica's KV capacity in the LB's cache model comes from. */
export const CAPACITY_SOURCES = ["override", "metrics"] as const;
export type CapacitySource = (typeof CAPACITY_SOURCES)[number];

/** Why an LB cleared a replica's part of its prefix index: the engine restarted (its metrics say),
 * its cache was emptied (its reports lost blocks far younger than it keeps, or several zero-cached
 * reports in a row where hits were predicted: a /flush_cache), or the operator flushed the index. */
export const INDEX_CLEAR_REASONS = ["engine-restart", "cache-lost", "operator"] as const;
export type IndexClearReason = (typeof INDEX_CLEAR_REASONS)[number];

/** Cost weights. W_prefill is fixed at 1: only ratios matter. */
export interface Weights {
  rtt: number;
  queue: number;
}

/** The two arms of a tuner trial (packages/tuner/README.md): the weights in force, and the candidate. */
export const TRIAL_ARMS = ["incumbent", "candidate"] as const;
export type TrialArm = (typeof TRIAL_ARMS)[number];

/**
 * The largest cost weight the wire accepts (LbConfig weights and a trial's candidate). Far above any
 * weight worth running (the tuner searches up to WEIGHT_BOUNDS, 100 and 10, and an operator may go
 * beyond those by hand), and small enough that every score stays finite: the score's inputs (RTT in
 * ms, queued tokens, prompt tokens) are below 2^53 ≈ 9e15, so W_rtt·rtt + W_queue·queued + uncached
 * stays below 2e22, nowhere near Number.MAX_VALUE. Unbounded, {rtt: 1e307} made every score
 * Infinity and the argmin meaningless.
 */
export const MAX_COST_WEIGHT = 1e6;

/** The paper's defaults; the LB config, the console's database and the tuner's start all use these. */
export const DEFAULT_WEIGHTS: Readonly<Weights> = Object.freeze({ rtt: 0.5, queue: 0.1 });
/**
 * Inclusive [lo, hi] per weight: the tuner's default search box (lo > 0: it mutates in log space).
 * GORGO's lower bounds with the upper bounds opened wide (packages/tuner/README.md, "Bounds"). The
 * paper's [0.05, 2] × [0.05, 0.5] caps W_rtt/W_queue at 40, and the short-prompt optimum sits near
 * 100. The weights convert RTT milliseconds and queued tokens into prefill tokens, so W_rtt ≈ a
 * replica's prefill rate in tokens/ms (1–100 on current hardware) and W_queue ≈ 1 when a queued token
 * costs what one's own prefill token does: the upper bounds cover those values. W_queue keeps the
 * paper's floor: below it the cost goes blind to load (GORGO Appendix D's reward hack), and a
 * concurrent trial cannot see the harm, because a load-blind arm free-rides on the other arm's balancing.
 */
export const WEIGHT_BOUNDS: Readonly<{ rtt: readonly [number, number]; queue: readonly [number, number] }> = Object.freeze({
  rtt: [0.05, 100] as const,
  queue: [0.05, 10] as const,
});
/** GORGO's published search box, to reproduce the paper (`meridian-sim tune --rtt-bounds 0.05,2 --queue-bounds 0.05,0.5`). */
export const PAPER_WEIGHT_BOUNDS: Readonly<{ rtt: readonly [number, number]; queue: readonly [number, number] }> = Object.freeze({
  rtt: [0.05, 2.0] as const,
  queue: [0.05, 0.5] as const,
});

/** The most routes (block, replica pairs) a PrefixIndex may be sized for, 2^31 - 1: its route
 * numbers are 32-bit signed integers. The LB config's index.capacityBlocks is capped at it too. */
export const MAX_INDEX_CAPACITY_BLOCKS = 0x7fffffff;

/** What a policy sees of the request. Built once per request (parse once, never tokenize). */
export interface RequestView {
  /** Chained block keys of the prompt (chat: 64-char blocks; traces: hash_ids). */
  keys: readonly BlockKey[];
  /** Estimated prompt tokens (characters / chars-per-token, or the trace's input_length). */
  inputTokens: number;
  /** Tokens one block key stands for (chat ≈ 16, Mooncake 512, ART-Chat 256). */
  tokensPerBlock: number;
  /** Characters of prompt text one key stands for: chat keys (64); absent for trace keys (hash_ids),
   * whose size is known only in tokens. Peer policies that block by bytes (llm-d) read it. */
  keyChars?: number;
  /** The engine's cached-token reports for these keys are exact: token-exact keys, and an engine that
   * reports a full hit whole (the simulator's engines over trace hash ids). The cache feedback then
   * compares without its one-block rounding slack when the counts agree. Absent for live traffic, token
   * ids included: real engines never report a prompt's last token as cached. */
  exactCachedReports?: boolean;
  /** Session key: explicit user / x-session-id, else a chat's preamble and first message
   * (chatSessionKey), or another prompt's first blocks (sessionKeyFromBlocks). */
  sessionKey: string;
  /** Region the client request entered from. */
  clientRegion: string;
}

/** Engine metrics from the last scrape; null until the first successful scrape. */
export interface ScrapedLoad {
  running: number;
  waiting: number;
  usedTokens: number;
}

/** What a policy sees of one candidate replica. */
export interface CandidateView {
  id: string;
  region: string;
  /** EWMA RTT from this LB to the replica, in ms. */
  rttMs: number;
  /** Requests this LB has in flight on the replica. */
  inFlight: number;
  /** Prompt tokens in flight on the replica (dispatched, not yet complete): this LB's plus what
   * peers report. */
  queuedTokens: number;
  /** Uncached prompt tokens of the requests in flight on the replica that have not reached their
   * first response byte (prompt minus predicted cached, released at the first byte): the prefill
   * work queued ahead of a new request. This LB's plus what peers report. */
  pendingPrefillTokens: number;
  scraped: ScrapedLoad | null;
  /** SkyLB "full": waiting > 0 at last scrape, or inFlight reached the admitted concurrency. */
  full: boolean;
  healthy: boolean;
  /** The replica's KV-cache capacity in tokens (SGLang `max_total_num_tokens`; vLLM
   * `num_gpu_blocks × block_size`), from the scrape or the operator's override. Optional: until the
   * scraped view carries it, policies that need it fall back the way their sources do when the
   * metric is missing (KV utilization reads as 0, llm-d's LRU takes its default size). */
  kvCapacityTokens?: number;
}

/** A seeded random source; the caller owns the seed so runs are reproducible. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
}

export interface CandidateScore {
  id: string;
  /** Policy-specific score; lower is better. For gorgo the full cost in token units. */
  score: number;
  /** Blocks of this request the index predicts the candidate holds. */
  matchedBlocks: number;
}

export interface Decision {
  /** Id of the chosen candidate. */
  choice: string;
  /** One entry per candidate, in candidate order, for telemetry and the console. */
  scores: CandidateScore[];
  /** Predicted cached prompt tokens on the chosen candidate. */
  predictedCachedTokens: number;
  /** Why the policy chose as it did when it deviated from its main rule (e.g. "fallback:least-request"). */
  reason?: string;
}
