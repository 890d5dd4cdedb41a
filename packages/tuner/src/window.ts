// Paper-mode evaluation windows: the samples one (trailing) window scores.

import { percentile } from "./stats/quantile";
import type { Arm } from "./trial/arm";

/**
 * One routed request as the tuner sees it (a projection of a telemetry event). Callers feed only
 * valid samples: a client error (4xx) or a client abort says nothing about the weights.
 */
export interface TunerSample {
  /** Config version that routed the request. */
  configVersion: number;
  /** null when no first token arrived (failure, or an empty completion). */
  ttftMs: number | null;
  e2eMs: number;
  /** null when no replica was reached. */
  replicaId: string | null;
  /** false for a server-side failure (5xx, 429, or a transport failure). */
  ok: boolean;
  /** ab: the trial and arm that routed the request (absent outside a trial). */
  trialId?: string;
  arm?: Arm;
  /** ab: whether the other arm's weights would have picked another replica (absent = unknown). */
  triggered?: boolean;
  /** ab: the session key the arm was chosen by (the randomization unit). */
  sessionKey?: string;
  /** Prompt tokens (the CUPED covariate). */
  inputTokens?: number;
}

export interface WindowSummary {
  samples: number;
  /** p95 over the samples that have a TTFT; null when none has. */
  p95TtftMs: number | null;
  /** 0 for an empty window. */
  e2eP95Ms: number;
  /** Fraction of the window's samples that each replica served (samples with no replica count in the denominator). */
  shares: Record<string, number>;
  /** Largest entry of `shares`; 0 when no sample reached a replica. */
  maxShare: number;
  /** Fraction of samples with ok = false; 0 for an empty window. */
  errorRate: number;
}

export function summarizeWindow(samples: readonly TunerSample[]): WindowSummary {
  const ttfts: number[] = [];
  const e2es: number[] = [];
  const perReplica = new Map<string, number>();
  let errors = 0;
  for (const sample of samples) {
    if (sample.ttftMs !== null) ttfts.push(sample.ttftMs);
    e2es.push(sample.e2eMs);
    if (!sample.ok) errors++;
    if (sample.replicaId !== null) perReplica.set(sample.replicaId, (perReplica.get(sample.replicaId) ?? 0) + 1);
  }
  const shares: Record<string, number> = {};
  let maxShare = 0;
  for (const [replicaId, served] of perReplica) {
    const share = served / samples.length;
    shares[replicaId] = share;
    maxShare = Math.max(maxShare, share);
  }
  return {
    samples: samples.length,
    p95TtftMs: percentile(ttfts, 0.95),
    e2eP95Ms: percentile(e2es, 0.95) ?? 0,
    shares,
    maxShare,
    errorRate: samples.length === 0 ? 0 : errors / samples.length,
  };
}
