// Which finished requests are tuner samples: the rule the console and the simulator's tuner driver
// both apply to LB telemetry, so a request counts (or not) the same way live and simulated.
//
// A client error (4xx) says the client sent something the engine refused; a client abort (499) says
// the client gave up. Neither says anything about the weights, and counting them as failures let an
// unauthenticated client veto every candidate with requests the engine rejects with 400. They are
// not samples at all. 429 is the exception: an overloaded replica refusing work is the routing's
// business, so it counts as a failure like a 5xx or a transport error.

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
