// Prediction accuracy over a rolling window, for one replica: Σ min(predicted, actual) / Σ max(...)
// of cached tokens over the reports of the last `windowMs` (at most `capacity` of them). 1 means every
// prediction was exact; a replica whose cache was emptied behind the LB's back drops towards 0 within
// a few requests, which is what an operator needs to see at a glance: hence a one-minute window, short
// enough that a collapse is not averaged away by the minutes before it. A fixed-size ring, so memory
// stays bounded whatever the request rate.

export interface PredictionWindowStats {
  /** Σmin/Σmax over the window (1 when every report was 0 of 0); null when it holds no report. */
  accuracy: number | null;
  /** Reports in the window that carried a cached-token count. */
  reports: number;
  /** Completions in the window whose usage carried no cached-token count. */
  unreported: number;
  predictedTokens: number;
  actualTokens: number;
}

export const DEFAULT_PREDICTION_WINDOW_MS = 60_000;
const DEFAULT_CAPACITY = 512;

export class PredictionWindow {
  private readonly at: Float64Array;
  private readonly predicted: Float64Array;
  /** NaN marks a completion without a cached-token report. */
  private readonly actual: Float64Array;
  private next = 0;
  private size = 0;

  constructor(
    readonly windowMs = DEFAULT_PREDICTION_WINDOW_MS,
    readonly capacity = DEFAULT_CAPACITY,
  ) {
    this.at = new Float64Array(capacity);
    this.predicted = new Float64Array(capacity);
    this.actual = new Float64Array(capacity);
  }

  /** Records one completion; `actual` null when the engine reported no cached-token count. */
  add(now: number, predicted: number, actual: number | null): void {
    this.at[this.next] = now;
    this.predicted[this.next] = predicted;
    this.actual[this.next] = actual === null ? Number.NaN : actual;
    this.next = (this.next + 1) % this.capacity;
    if (this.size < this.capacity) this.size++;
  }

  clear(): void {
    this.next = 0;
    this.size = 0;
  }

  stats(now: number): PredictionWindowStats {
    let overlap = 0;
    let union = 0;
    let reports = 0;
    let unreported = 0;
    let predictedTokens = 0;
    let actualTokens = 0;
    const since = now - this.windowMs;
    for (let i = 0; i < this.size; i++) {
      if ((this.at[i] as number) <= since) continue;
      const a = this.actual[i] as number;
      if (Number.isNaN(a)) {
        unreported++;
        continue;
      }
      const p = this.predicted[i] as number;
      reports++;
      predictedTokens += p;
      actualTokens += a;
      overlap += Math.min(p, a);
      union += Math.max(p, a);
    }
    return { accuracy: reports === 0 ? null : union > 0 ? overlap / union : 1, reports, unreported, predictedTokens, actualTokens };
  }
}
