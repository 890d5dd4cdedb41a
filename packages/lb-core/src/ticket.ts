// One request as the LB core tracks it, from admission to completion, and the refusals the core can
// answer with. A ticket carries the config version, policy and weights in force when it arrived, so
// a request held across a config push is routed and reported under the weights it arrived under.
import {
  type AssistantToolCall,
  type BlockKey,
  type Decision,
  DEFAULT_BLOCK_CHARS,
  type DispatchSnapshot,
  type Policy,
  type PolicyName,
  type RequestView,
  type Weights,
} from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import type { PeerRecord, ReplicaRecord } from "./targets";
import { admitToTrial, type TicketTrial } from "./trial";

/** Keys of the next turn from the reply: its text (empty when none) and the tool calls it made. */
type NextTurnKeys = (reply: string, toolCalls: readonly AssistantToolCall[]) => readonly BlockKey[] | null;

/** The LB a peer's forward entered at, and the policy it routed the request by (when it said). */
export interface ForwardEntry {
  lbId: string;
  policy?: PolicyName;
}

/** A request the core admits: the parsed facts routing needs, nothing of the transport. */
export interface AdmitInput {
  keys: readonly BlockKey[];
  sessionKey: string;
  /** The requested model; null routes to any replica. */
  model: string | null;
  /** 0 from a client; 1 when a peer LB forwarded it here (never forwarded again). */
  hop: number;
  /** Where the client is; defaults to the LB's region. A live LB knows it only for a peer's forward
   * (the forwarding LB's region); the simulator knows it for every request. */
  clientRegion?: string;
  /** Of a peer's forward (hop 1): the LB the request entered at (telemetry `entryLbId`, `entryPolicy`). */
  entry?: ForwardEntry;
  /** Characters of the canonical prompt: the core estimates tokens from them and calibrates the
   * estimate from the engine's usage.prompt_tokens. Give either this or `inputTokens`. */
  promptChars?: number;
  /** false: `promptChars` is not all text (media parts stand in as a fixed count the engine does not
   * spend), so the engine's count of the prompt must not calibrate the chars/token ratio. Default true. */
  calibrates?: boolean;
  /** Prompt tokens when they are known (a trace row, token ids): exact, and never calibrating. */
  inputTokens?: number;
  /** Tokens one key stands for when `inputTokens` is given (trace: the block size). */
  tokensPerBlock?: number;
  /** The engines' cached-token reports for these keys are exact, full hits included: the simulator's
   * engines over trace keys (RequestView.exactCachedReports). Never for live traffic, token ids
   * included: a real engine never reports a prompt's last token as cached. Default false. */
  exactCachedReports?: boolean;
  /** The client presented a valid client key. Only such requests go to a peer whose region requires
   * keys (PeerReport.clientKeysRequired). Default false. */
  clientKeyed?: boolean;
  /** Keys of prompt + reply (its text and tool calls) as the next turn will present them, or null when
   * the reply adds no full block. Absent when the reply is unknown (a trace): completion then re-learns
   * the prompt. */
  nextTurnKeys?: NextTurnKeys;
}

export type TargetKind = "replica" | "peer";

export interface Target {
  kind: TargetKind;
  id: string;
  /** The record whose counters this dispatch was booked on (null for a peer). A config that changes
   * the replica's URL makes a new record under the same id; this dispatch is released from the old
   * one, so the new one's counters hold only its own requests. */
  record: ReplicaRecord | null;
  /** The peer record a forward was booked on (null for a replica): a config that changes the peer's
   * URL makes a new record under the same id, as for a replica. */
  peer: PeerRecord | null;
  /** Cached prompt tokens the index predicted on the chosen replica (0 for a peer). */
  predictedCachedTokens: number;
  /** Why the policy deviated from its main rule (e.g. "fallback:least-request"), or the forward reason. */
  reason: string | null;
  /** Set once this LB's in-flight counters no longer include the request. */
  released: boolean;
  /** Set at the first response bytes (headers) from the target. */
  responded: boolean;
  /** A forward's time from dispatch to its first byte, kept until its answer says how much of the
   * prompt the peer held (completion.ts teaches the peer's prefill rate then); null otherwise. */
  firstByteMs: number | null;
  /** Uncached prompt tokens still charged to the replica's pending prefill: the prompt minus the
   * predicted cached tokens at dispatch, 0 from the first response byte on (0 for a peer). */
  pendingPrefillTokens: number;
  /** The policy told of this dispatch, under `observedId`, so its first byte and end reach the same
   * policy instance even after a config push replaced the LB's policy (null: nothing to tell). */
  observer: Policy | null;
  observedId: string | null;
  /** The index's view of the chosen replica at dispatch, for the cached-token feedback; null for a
   * peer or when the LB does not learn from cache reports. */
  snapshot: DispatchSnapshot | null;
}

/** The target of a dispatch to a replica, charged `pendingPrefillTokens` until its first byte. */
export function replicaTarget(
  record: ReplicaRecord | null,
  id: string,
  decision: Decision,
  pendingPrefillTokens: number,
  observer: Policy | null,
  observedId: string | null,
  snapshot: DispatchSnapshot | null,
): Target {
  const { predictedCachedTokens, reason } = decision;
  return {
    kind: "replica",
    id,
    record,
    peer: null,
    predictedCachedTokens,
    reason: reason ?? null,
    released: false,
    responded: false,
    firstByteMs: null,
    pendingPrefillTokens,
    observer,
    observedId,
    snapshot,
  };
}

/** The target of a forward to a peer LB (its own core books the replica's load). */
export function peerTarget(peer: PeerRecord | null, id: string, reason: string): Target {
  return {
    kind: "peer",
    id,
    record: null,
    peer,
    predictedCachedTokens: 0,
    reason,
    released: false,
    responded: false,
    firstByteMs: null,
    pendingPrefillTokens: 0,
    observer: null,
    observedId: null,
    snapshot: null,
  };
}

/** A ticket is its own RequestView (what the policies see), so a request in flight is one object,
 * not two: tickets live as long as their requests and would otherwise double what the GC promotes. */
export class Ticket<J> implements RequestView {
  /** Targets that failed this request before any byte reached the client. */
  excluded: Set<string> | null = null;
  /** Placements so far (the first try and retries). */
  attempts = 0;
  target: Target | null = null;
  held = false;
  done = false;
  /** Characters one key stands for: 64 for chat keys (lb-core's admit), undefined for trace keys. */
  keyChars: number | undefined = undefined;
  /** AdmitInput.exactCachedReports. */
  exactCachedReports = false;
  /** AdmitInput.clientKeyed. */
  clientKeyed = false;
  /** AdmitInput.entry; null for a client's own request. */
  entry: ForwardEntry | null = null;

  constructor(
    /** The driver's own object for this request (a proxy job, a simulated flight). */
    readonly owner: J,
    readonly keys: readonly BlockKey[],
    readonly inputTokens: number,
    readonly tokensPerBlock: number,
    readonly sessionKey: string,
    readonly clientRegion: string,
    readonly model: string | null,
    readonly hop: number,
    /** Characters whose engine token count calibrates the estimate: a text-only prompt's promptChars,
     * else null (sized in tokens, or with media parts). */
    readonly calibrationChars: number | null,
    readonly nextTurnKeys: NextTurnKeys | null,
    /** Arrival on the core's clock (telemetry `time`). */
    readonly arrivalMs: number,
    readonly configVersion: number,
    /** The policy that placed it: the arrival's, or the one a config push switched to while it was
     * held or before a retry (LbCore.commit), so its telemetry names what routed it. */
    public policy: PolicyName,
    /** The weights of the request's trial arm (the config's weights outside a trial). */
    readonly weights: Weights,
    /** Its part in the config's tuner trial; null outside one. */
    readonly trial: TicketTrial | null,
  ) {}

  /** What the policies see of the request (this ticket itself). */
  get view(): RequestView {
    return this;
  }

  isExcluded(id: string): boolean {
    return this.excluded?.has(id) === true;
  }
}

/** The ticket of a request admitted under `config`: in its session's trial arm, calibrating the
 * token estimate only when its size is text-only characters (AdmitInput.calibrates). */
export function admittedTicket<J>(owner: J, input: AdmitInput, inputTokens: number, tokensPerBlock: number, config: LbConfig, now: number): Ticket<J> {
  const { weights, trial } = admitToTrial(config, input.sessionKey);
  const ticket = new Ticket(
    owner,
    input.keys,
    inputTokens,
    tokensPerBlock,
    input.sessionKey,
    input.clientRegion ?? config.region,
    input.model,
    input.hop,
    input.calibrates === false ? null : (input.promptChars ?? null),
    input.nextTurnKeys ?? null,
    now,
    config.version,
    config.policy,
    weights,
    trial,
  );
  if (input.tokensPerBlock === undefined) ticket.keyChars = DEFAULT_BLOCK_CHARS; // chat keys
  ticket.exactCachedReports = input.exactCachedReports === true;
  ticket.clientKeyed = input.clientKeyed === true;
  ticket.entry = input.entry ?? null;
  return ticket;
}

/** A refusal, in OpenAI error terms, with the reason label the LB's metrics count it under. */
export interface Failure {
  status: number;
  type: "invalid_request_error" | "server_error";
  code: string;
  message: string;
  param: string | null;
  /** Seconds for Retry-After; null when retrying would not help. */
  retryAfterSeconds: number | null;
  /** meridian_lb_rejected_requests_total{reason}. */
  reason: string;
  /** The exception behind a routing_error, for the shell's log. */
  cause?: unknown;
}

export const failures = {
  modelNotFound: (model: string): Failure => ({
    status: 404,
    type: "invalid_request_error",
    code: "model_not_found",
    message: `The model \`${model}\` does not exist on this load balancer.`,
    param: "model",
    retryAfterSeconds: null,
    reason: "unknown_model",
  }),
  /** OpenAI's answer to a prompt longer than the context (400 context_length_exceeded). */
  promptTooLong: (tokens: number, limit: number): Failure => ({
    status: 400,
    type: "invalid_request_error",
    code: "context_length_exceeded",
    message: `the prompt is about ${Math.round(tokens)} tokens; this load balancer admits at most ${limit}`,
    param: "messages",
    retryAfterSeconds: null,
    reason: "prompt_too_long",
  }),
  noReplica: (): Failure => ({
    status: 503,
    type: "server_error",
    code: "no_replica",
    message: "no enabled replica serves this request",
    param: null,
    retryAfterSeconds: 5,
    reason: "no_replica",
  }),
  upstreamExhausted: (): Failure => ({
    status: 502,
    type: "server_error",
    code: "upstream_error",
    message: "the upstream failed and no other replica can take the request",
    param: null,
    retryAfterSeconds: null,
    reason: "upstream_error",
  }),
  queueFull: (maxLength: number): Failure => ({
    status: 503,
    type: "server_error",
    code: "queue_full",
    message: `every replica is busy and the LB queue is full (${maxLength})`,
    param: null,
    retryAfterSeconds: 1,
    reason: "queue_full",
  }),
  queueTimeout: (maxWaitMs: number): Failure => ({
    status: 503,
    type: "server_error",
    code: "queue_timeout",
    message: `no replica became available within ${maxWaitMs} ms`,
    param: null,
    retryAfterSeconds: 1,
    reason: "queue_timeout",
  }),
  shuttingDown: (): Failure => ({
    status: 503,
    type: "server_error",
    code: "shutting_down",
    message: "the load balancer is shutting down",
    param: null,
    retryAfterSeconds: 1,
    reason: "shutting_down",
  }),
  routingError: (cause: unknown): Failure => ({
    status: 500,
    type: "server_error",
    code: "routing_error",
    message: "routing failed",
    param: null,
    retryAfterSeconds: null,
    reason: "routing_error",
    cause,
  }),
};
