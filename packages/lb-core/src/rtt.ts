// The RTT estimate an LB keeps per replica and per peer LB: an EWMA of probe samples (α = 0.3, the
// first sample seeds it). The proxy feeds it measured GET /health and peer-poll round trips; the
// simulator feeds it the virtual probe samples. One implementation, so both smooth identically.
//
// A probe that timed out is not a sample (the drivers report it as a failure, never here). A late
// answer is: a replica that was frozen answers its first probe after resuming only once it has worked
// through its backlog, hundreds of times its usual RTT. Folded into the EWMA, one such sample keeps a
// healthy replica looking far away for dozens of probes, and GORGO starves it. So a sample far above
// the estimate is an outlier and is left out; a run of them in a row is a real change (a new route,
// a loaded link) and re-seeds the estimate at the run's smallest sample, the one least inflated by
// queueing. A sample far below the estimate re-seeds it at once: a round trip cannot be faster than
// its path, so it is the estimate that was wrong (seeded by a slow first answer).

/** Weight of the newest sample (docs/ARCHITECTURE.md, "Probes and health"). */
export const RTT_EWMA_ALPHA = 0.3;
/** A sample more than this many times the estimate… */
const RTT_OUTLIER_FACTOR = 4;
/** …and more than this many ms above it is an outlier. At loopback scale (~1 ms) a factor alone would
 * call ordinary scheduling jitter a stall; a frozen replica's late answer is hundreds of ms. */
const RTT_OUTLIER_MIN_EXCESS_MS = 25;
/** Outliers in a row after which the estimate follows them (a genuinely changed RTT). */
export const RTT_OUTLIER_RUN = 3;

export function nextRttEwma(previous: number | null, sampleMs: number): number {
  return previous === null ? sampleMs : RTT_EWMA_ALPHA * sampleMs + (1 - RTT_EWMA_ALPHA) * previous;
}

/** How one sample was taken in: folded into the average, left out as an outlier, or a new seed. */
export type RttSampleFate = "sample" | "outlier" | "reseed" | "invalid";

export class RttEstimate {
  private value: number | null = null;
  private outlierRun = 0;
  private outlierRunMin = Number.POSITIVE_INFINITY;

  /** The smoothed RTT in ms, or null before the first sample. */
  get ms(): number | null {
    return this.value;
  }

  /** Folds in one answered probe's round trip (a timed-out probe is not a sample). */
  observe(sampleMs: number): RttSampleFate {
    if (!Number.isFinite(sampleMs) || sampleMs < 0) return "invalid";
    const value = this.value;
    if (value === null) {
      this.value = sampleMs;
      return "sample";
    }
    if (isFarAbove(sampleMs, value)) {
      this.outlierRun++;
      this.outlierRunMin = Math.min(this.outlierRunMin, sampleMs);
      if (this.outlierRun < RTT_OUTLIER_RUN) return "outlier";
      this.reseed(this.outlierRunMin);
      return "reseed";
    }
    if (isFarAbove(value, sampleMs)) {
      this.reseed(sampleMs);
      return "reseed";
    }
    this.outlierRun = 0;
    this.outlierRunMin = Number.POSITIVE_INFINITY;
    this.value = nextRttEwma(value, sampleMs);
    return "sample";
  }

  private reseed(sampleMs: number): void {
    this.value = sampleMs;
    this.outlierRun = 0;
    this.outlierRunMin = Number.POSITIVE_INFINITY;
  }
}

function isFarAbove(high: number, low: number): boolean {
  return high > RTT_OUTLIER_FACTOR * low && high - low > RTT_OUTLIER_MIN_EXCESS_MS;
}
