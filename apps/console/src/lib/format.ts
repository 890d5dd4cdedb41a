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

export function fmtNum(n: number | null | undefined, digits = 0): string {
  if (n == null || !Number.isFinite(n)) return DASH;
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function fmtWeight(w: number | null | undefined): string {
  if (w == null || !Number.isFinite(w)) return DASH;
  return w.toFixed(3);
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
