// Which finished requests are tuner samples: the rule the console and the simulator's tuner driver
// both apply to LB telemetry, so a request counts (or not) the same way live and simulated.
//
// A client error (4xx) says the client sent something the engine refused; a client abort (499) says
// the client gave up. Neither says anything about the weights, and counting them as failures let an
// unauthenticated client veto every candidate with requests the engine rejects with 400. They are
// not samples at all. 429 is the exception: an overloaded replica refusing work is the routing's
// business, so it counts as a failure like a 5xx or a transport error.
//
// A forwarded request yields two events: the entry LB's (the LB the client sent it to: forwarded,
// its latency what the client saw, including the hop) and the serving peer's (hop 1, naming the
// replica). To a tuner of one LB they belong to two tuners, or one is a peer's. A tuner of several
// LBs (the fleet's) holds both when both LBs are its members, and counted twice the request would
// weigh double in the trial's arm and its p95. Its sample is the entry LB's event, what the client
// experienced; the peer's tells which replica served it, a peer request for the share guardrail, as
// the entry LB's own tuner counts it. A request that enters at an LB outside the fleet tuner (its
// policy does not read the weights) and is forwarded to a member has no entry event the tuner holds:
// its sample is the serving member's event, which names the entry LB and the policy it routed the
// request by (`entryLbId`, `entryPolicy`, sent with the forward, so the rule does not depend on which
// event arrives first). Only a successful one: a failed forward may have been retried at another peer
// by the entry LB, and whether its client saw the failure only the entry LB knows, so counting it
// could count one request twice (its sample is then lost; the error guardrail does not see failures
// of forwards from LBs outside the tuner). An LB too old to name its entry leaves such a request no
// sample, never two.

import type { Arm } from "./trial/arm";
import type { TunerSample } from "./window";

/** The fields of a telemetry event the tuner reads (structurally @meridian/protocol's TelemetryEvent). */
export interface TunerTelemetry {
  configVersion: number;
  ttftMs: number | null;
  e2eMs: number;
  replicaId: string | null;
  /** HTTP status returned to the client. */
  status: number;
  error: string | null;
  inputTokens?: number;
  sessionKey?: string | undefined;
  trialId?: string | undefined;
  arm?: Arm | undefined;
  triggered?: boolean | undefined;
  /** 0 when a client sent the request to this LB, 1 when a peer LB forwarded it here. */
  hop?: number;
  /** Of a forwarded request (hop 1): the LB it entered at and the policy that LB routed it by. */
  entryLbId?: string | undefined;
  entryPolicy?: string | undefined;
}

/** The LB a forwarded request entered at, as the serving LB's event names it. */
export interface ForwardEntryView {
  lbId: string;
  policy: string | undefined;
}

/** True for statuses that say nothing about the weights: client errors and aborts, not 429. */
export function isClientSide(status: number): boolean {
  return status >= 400 && status < 500 && status !== 429;
}

/** The tuner sample for one event, or null when the event is not a valid sample. */
export function sampleFromEvent(event: TunerTelemetry): TunerSample | null {
  if (isClientSide(event.status)) return null;
  const sample: TunerSample = {
    configVersion: event.configVersion,
    ttftMs: event.ttftMs,
    e2eMs: event.e2eMs,
    replicaId: event.replicaId,
    ok: event.status < 400 && event.error === null,
  };
  if (event.trialId !== undefined) sample.trialId = event.trialId;
  if (event.arm !== undefined) sample.arm = event.arm;
  if (event.triggered !== undefined) sample.triggered = event.triggered;
  if (event.sessionKey !== undefined) sample.sessionKey = event.sessionKey;
  if (event.inputTokens !== undefined) sample.inputTokens = event.inputTokens;
  return sample;
}

/** What one LB's event is to a tuner: its sample (when sampleFromEvent takes it), or a peer request.
 * `member`: the event's LB is one whose weights the tuner sets; `spansLbs`: the tuner sets several
 * LBs' weights, so it may also hold the entry LB's event of a request forwarded to this one;
 * `holdsEntry`: whether it does for the entry the event names (absent, or an event that names none:
 * it is taken to, so nothing counts twice). */
export function eventRole(
  event: Pick<TunerTelemetry, "hop" | "status" | "entryLbId" | "entryPolicy">,
  tuner: { member: boolean; spansLbs: boolean; holdsEntry?: (entry: ForwardEntryView) => boolean },
): "sample" | "peer" {
  if (!tuner.member) return "peer";
  if (!tuner.spansLbs || (event.hop ?? 0) === 0) return "sample";
  if (event.entryLbId === undefined || tuner.holdsEntry === undefined) return "peer";
  if (tuner.holdsEntry({ lbId: event.entryLbId, policy: event.entryPolicy })) return "peer";
  return event.status < 400 ? "sample" : "peer";
}
