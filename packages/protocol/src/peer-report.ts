import { z } from "zod";
import { blockKey, count, nonEmptyString, nonNegativeNumber, timeMs } from "./common";
import { makeParsers, schemaTag } from "./errors";

export const PEER_REPORT_SCHEMA = "meridian.peer-report/1";

/** The most prompt tokens a peer may claim in flight on one replica (2^40, some 10^12): far above any
 * real queue, and low enough that sums over peers stay finite (a peer's 1e308 made a replica's queue
 * Infinity, which the policies refuse: every request routed there answered 500). */
export const MAX_PEER_TOKENS = 2 ** 40;
const peerTokens = nonNegativeNumber.max(MAX_PEER_TOKENS);

export const PeerReplicaLoadSchema = z.object({
  id: nonEmptyString,
  /** Requests the reporting LB has in flight on the replica. */
  inFlight: count,
  /** Prompt tokens the reporting LB has in flight on the replica: added to queued_tokens so LBs don't herd. */
  inFlightTokens: peerTokens,
  /** Uncached prompt tokens of those requests still before their first response byte (the prefill
   * queued ahead on the replica). Absent from older LBs: read as 0. */
  pendingPrefillTokens: peerTokens.default(0),
  /** SkyLB "full" as the reporting LB sees it. */
  full: z.boolean(),
});

/**
 * Block keys the reporting LB's local replicas are believed to hold (SkyLB prefix snapshot). Keys are
 * chained, so a flat set is enough for a longest match: matching key k implies the whole prefix.
 */
export const PrefixSnapshotSchema = z.object({
  keys: z.array(blockKey),
  /** True when the LB sent only part of its index (most recently used first). */
  truncated: z.boolean(),
});

/** What an LB publishes to its peers (GET /peer/report): load for in-flight sharing and SkyLB forwarding. */
export const PeerReportSchema = z.object({
  schema: schemaTag(PEER_REPORT_SCHEMA),
  lbId: nonEmptyString,
  region: nonEmptyString,
  time: timeMs,
  configVersion: z.int().nonnegative(),
  /** One entry per replica: a replica listed twice would count its tokens twice. */
  replicas: z.array(PeerReplicaLoadSchema).refine((replicas) => new Set(replicas.map((r) => r.id)).size === replicas.length, {
    message: "lists a replica more than once",
  }),
  /** Requests waiting in the reporting LB's FIFO queue (compared with τ). */
  queueLength: count,
  /** Local replicas of the reporting LB that are healthy, enabled and not full. */
  availableReplicas: count,
  /** availableReplicas by the model they serve, every model of its local replicas listed (0 when all
   * of them are full or down): a request goes to a peer only if a replica there serves its model (a
   * peer serving only another model would answer 404 model_not_found). Absent from older LBs: then
   * availableReplicas stands for every model. */
  availableByModel: z.record(nonEmptyString, count).optional(),
  /** The reporting LB's region requires client keys: a peer forwards it only requests whose client
   * presented a valid key (forwarded keyless, they would run there past the region's rule). Absent
   * from older LBs: false. */
  clientKeysRequired: z.boolean().optional(),
  snapshot: PrefixSnapshotSchema.optional(),
});

export type PeerReport = z.output<typeof PeerReportSchema>;
export type PeerReplicaLoad = z.output<typeof PeerReplicaLoadSchema>;
export type PrefixSnapshot = z.output<typeof PrefixSnapshotSchema>;

const peerReportParsers = makeParsers(PeerReportSchema, "peerReport");
export const parsePeerReport: (input: unknown) => PeerReport = peerReportParsers.parse;
export const safeParsePeerReport = peerReportParsers.safeParse;
