// Validation of what callers feed the tuner: a bad sample is a caller bug and must fail loudly
// with the field named, never be scored.

import { requireFiniteNumber, requireInteger, TunerInputError } from "./config";
import type { TunerSample } from "./window";

function optionalString(field: string, value: unknown): void {
  if (value !== undefined && typeof value !== "string") throw new TunerInputError(field, `expected a string, received ${typeof value}`);
}

export function validateSample(value: unknown): TunerSample {
  if (typeof value !== "object" || value === null) {
    throw new TunerInputError("sample", `expected an object, received ${value === null ? "null" : typeof value}`);
  }
  const sample = value as Record<string, unknown>;
  requireInteger("sample.configVersion", sample.configVersion, 0);
  if (sample.ttftMs !== null) {
    const ttft = requireFiniteNumber("sample.ttftMs", sample.ttftMs);
    if (ttft < 0) throw new TunerInputError("sample.ttftMs", `expected a number >= 0 or null, received ${ttft}`);
  }
  const e2e = requireFiniteNumber("sample.e2eMs", sample.e2eMs);
  if (e2e < 0) throw new TunerInputError("sample.e2eMs", `expected a number >= 0, received ${e2e}`);
  if (sample.replicaId !== null && typeof sample.replicaId !== "string") {
    throw new TunerInputError("sample.replicaId", `expected a string or null, received ${typeof sample.replicaId}`);
  }
  if (typeof sample.ok !== "boolean") throw new TunerInputError("sample.ok", `expected a boolean, received ${typeof sample.ok}`);
  optionalString("sample.trialId", sample.trialId);
  optionalString("sample.sessionKey", sample.sessionKey);
  if (sample.arm !== undefined && sample.arm !== "incumbent" && sample.arm !== "candidate") {
    throw new TunerInputError("sample.arm", `expected "incumbent" or "candidate", received ${JSON.stringify(sample.arm)}`);
  }
  if (sample.triggered !== undefined && typeof sample.triggered !== "boolean") {
    throw new TunerInputError("sample.triggered", `expected a boolean, received ${typeof sample.triggered}`);
  }
  if (sample.inputTokens !== undefined) requireInteger("sample.inputTokens", sample.inputTokens, 0);
  // Keep only the fields the tuner uses: callers may pass whole telemetry events.
  const checked: TunerSample = {
    configVersion: sample.configVersion as number,
    ttftMs: sample.ttftMs as number | null,
    e2eMs: e2e,
    replicaId: sample.replicaId as string | null,
    ok: sample.ok,
  };
  if (sample.trialId !== undefined) checked.trialId = sample.trialId as string;
  if (sample.arm !== undefined) checked.arm = sample.arm as TunerSample["arm"];
  if (sample.triggered !== undefined) checked.triggered = sample.triggered as boolean;
  if (sample.sessionKey !== undefined) checked.sessionKey = sample.sessionKey as string;
  if (sample.inputTokens !== undefined) checked.inputTokens = sample.inputTokens as number;
  return checked;
}
