// The RTT estimate an LB keeps per replica and per peer LB: an EWMA of probe samples (α = 0.3, the
// first sample seeds it). The proxy feeds it measured GET /health and peer-poll round trips; the
// simulator feeds it the virtual probe samples. One implementation, so both smooth identically.

/** Weight of the newest sample (docs/ARCHITECTURE.md, "Probes and health"). */
export const RTT_EWMA_ALPHA = 0.3;

export function nextRttEwma(previous: number | null, sampleMs: number): number {
  return previous === null ? sampleMs : RTT_EWMA_ALPHA * sampleMs + (1 - RTT_EWMA_ALPHA) * previous;
}

export class RttEstimate {
  private value: number | null = null;

  /** The smoothed RTT in ms, or null before the first sample. */
  get ms(): number | null {
    return this.value;
  }

  /** Folds in one probe sample. The place to reject timeouts and outliers before they enter the
   * average (a frozen replica's late answer must not poison it). */
  observe(sampleMs: number): void {
    if (!Number.isFinite(sampleMs) || sampleMs < 0) return;
    this.value = nextRttEwma(this.value, sampleMs);
  }
}
