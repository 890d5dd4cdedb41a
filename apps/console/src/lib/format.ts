// Display formatting shared by every page. Null means "no data yet", shown as an em dash.

const DASH = "—";

export function fmtMs(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return DASH;
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${ms.toFixed(1)} ms`;
}

export function fmtPct(fraction: number | null | undefined, digits = 1): string {
  if (fraction == null || !Number.isFinite(fraction)) return DASH;
  return `${(fraction * 100).toFixed(digits)}%`;
}

/**
 * A measured fraction and the cap it is compared with, as percentages with the fewest decimals (at
 * least `digits`) that tell them apart: 0.0504 against 0.05 is "5.04%" and "5.00%", never "5.0% > 5.0%".
 */
export function fmtPctVersus(value: number | null | undefined, cap: number | null | undefined, digits = 1): [string, string] {
  if (value == null || cap == null || !Number.isFinite(value) || !Number.isFinite(cap) || value === cap) return [fmtPct(value, digits), fmtPct(cap, digits)];
  // Bounded: toFixed takes at most 100, and beyond ~15 significant digits doubles differ only in noise.
  for (let d = digits; d < digits + 12; d += 1) {
    const pair: [string, string] = [fmtPct(value, d), fmtPct(cap, d)];
    if (pair[0] !== pair[1]) return pair;
  }
  return [fmtPct(value, digits + 12), fmtPct(cap, digits + 12)];
}

/** A multiplier such as a guardrail's 1 + g: "1.57×". Float noise (1 + 0.57 = 1.5699999999999998) is
 * dropped, the digits an operator set are kept. */
export function fmtFactor(x: number | null | undefined): string {
  if (x == null || !Number.isFinite(x)) return DASH;
  return `${Number(x.toPrecision(12))}×`;
}

export function fmtNum(n: number | null | undefined, digits = 0): string {
  if (n == null || !Number.isFinite(n)) return DASH;
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * A routing weight to three significant digits ("0.800", "12.5", "0.000300"): weights span decades
 * and every one an LB accepts is positive, so fixed decimals would show a live 0.0003 as "0.000".
 */
export function fmtWeight(w: number | null | undefined): string {
  if (w == null || !Number.isFinite(w)) return DASH;
  if (w === 0) return "0";
  // toPrecision switches to exponents at 1e3 and above; whole numbers read better there.
  if (Math.abs(w) >= 1000) return w.toFixed(0);
  return w.toPrecision(3);
}

/**
 * A weight as an axis label (the landscape grid, the trajectory chart), where room is short and the
 * values are grid points or ticks: two significant digits below 1 with trailing zeros dropped ("0.05",
 * "0.25"), one decimal to 10 ("2.5"), whole above ("12", "100"). Live weights use fmtWeight.
 */
export function fmtWeightTick(w: number): string {
  return w >= 10 ? w.toFixed(0) : w >= 1 ? w.toFixed(1) : String(Number(w.toPrecision(2)));
}

/** The manual weights form's text for a live weight: six significant digits, trailing zeros dropped
 * ("0.8", "0.0003"). What is submitted for an untouched field is the live value itself, not this. */
export function weightFieldText(w: number): string {
  return Number.isFinite(w) ? String(Number(w.toPrecision(6))) : "";
}

/** Accepts epoch ms, ISO strings and Dates, since timestamps cross the wire in whichever form the row has. */
export function toEpochMs(t: number | string | Date): number {
  if (typeof t === "number") return t;
  if (t instanceof Date) return t.getTime();
  return new Date(t).getTime();
}

// Every time the console shows is UTC, marked "Z" (as the audit log and the experiments print it):
// the browser's own zone would put two different clocks on one screen, unlabelled.

/** Time of day in UTC: "14:03:07Z" (chart axes and tooltips, tuner steps, deadlines today). */
export function fmtClock(t: number | string | Date): string {
  const d = new Date(toEpochMs(t));
  return `${d.toISOString().slice(11, 19)}Z`;
}

/** Date and time in UTC: "2026-11-23 14:03:07Z". */
export function fmtDateTime(t: number | string | Date): string {
  const d = new Date(toEpochMs(t));
  return `${d.toISOString().slice(0, 10)} ${fmtClock(d)}`;
}

/** How long ago, coarsely: "just now", "12 s ago", "3 min ago". */
export function fmtAgo(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return DASH;
  if (ms < 1_000) return "just now";
  if (ms < 120_000) return `${Math.round(ms / 1_000)} s ago`;
  return `${Math.round(ms / 60_000)} min ago`;
}

export function fmtJson(v: unknown): string {
  if (v == null) return DASH;
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
