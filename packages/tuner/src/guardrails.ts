// The guardrails: rules that veto a candidate whatever its TTFT, because the objective (p95 TTFT)
// can be gamed by concentrating load (GORGO Appendix D, the W_queue reward hack).
//
// - Absolute rules judge a measurement on its own (error-rate cap, share cap), so they apply to the
//   incumbent too. While the incumbent violates one, a candidate that passes is accepted whatever its
//   TTFT, and one that also violates must violate less: a tuner started inside the hack climbs out.
// - The E2E rule is relative: the candidate's E2E p95 may not exceed (1 + g) × the incumbent's, and
//   only while the incumbent itself passes (a hacked incumbent's fast E2E is no reference).
// In A/B trials both measurements come from the same period (the two arms); in paper mode the
// incumbent's is the one stored when it was last accepted or re-measured.

import type { GuardrailConfig } from "./config";

export type GuardrailVerdict = "pass" | "e2e" | "share" | "errors";
/** An incumbent's standing against the absolute guardrails; "pass" when off or not yet measured. */
export type IncumbentGuardrail = "pass" | "share" | "errors";

export interface Measurement {
  /** null when the measurement had no first token to rank. */
  p95TtftMs: number | null;
  e2eP95Ms: number;
  maxShare: number;
  errorRate: number;
}

export interface IncumbentStanding {
  e2eP95Ms: number | null;
  maxShare: number | null;
  errorRate: number | null;
  guardrail: IncumbentGuardrail;
}

export function absoluteGuardrail(rails: GuardrailConfig, errorRate: number, maxShare: number): IncumbentGuardrail {
  if (!rails.enabled) return "pass";
  if (errorRate > rails.maxErrorRate) return "errors";
  if (maxShare > rails.maxShare) return "share";
  return "pass";
}

/** The candidate's own verdict. A measurement with no first token at all is an error verdict, guardrails or not. */
export function candidateVerdict(rails: GuardrailConfig, candidate: Measurement, incumbent: IncumbentStanding): GuardrailVerdict {
  if (candidate.p95TtftMs === null) return "errors";
  const absolute = absoluteGuardrail(rails, candidate.errorRate, candidate.maxShare);
  if (absolute !== "pass") return absolute;
  if (rails.enabled && incumbent.guardrail === "pass" && incumbent.e2eP95Ms !== null && candidate.e2eP95Ms > (1 + rails.e2eTolerance) * incumbent.e2eP95Ms) {
    return "e2e";
  }
  return "pass";
}

/**
 * Against an incumbent that violates an absolute guardrail: does the candidate violate less? Errors
 * first (failed requests are worse than uneven load), then share; only the excess over each cap
 * counts, so an error rate within its cap never outweighs a share violation. A tie is not "less".
 */
export function violatesLess(rails: GuardrailConfig, candidate: Measurement, incumbent: IncumbentStanding): boolean {
  const errorExcess = (rate: number) => Math.max(0, rate - rails.maxErrorRate);
  const shareExcess = (share: number) => Math.max(0, share - rails.maxShare);
  const candidateErrors = errorExcess(candidate.errorRate);
  const incumbentErrors = errorExcess(incumbent.errorRate ?? 0);
  if (candidateErrors !== incumbentErrors) return candidateErrors < incumbentErrors;
  return shareExcess(candidate.maxShare) < shareExcess(incumbent.maxShare ?? 0);
}
