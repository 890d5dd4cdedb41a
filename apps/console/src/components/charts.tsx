"use client";
// Every chart here is live: animations are off so a 1.5 s refetch does not restart a tween each time.
import {
  Area,
  AreaChart,
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ReferenceArea,
  ResponsiveContainer,
  Scatter,
  ScatterChart,
  Tooltip,
  XAxis,
  YAxis,
  ZAxis,
} from "recharts";
import { seriesColor } from "../lib/colors";
import { fmtClock, fmtMs, fmtNum, fmtWeightTick, toEpochMs } from "../lib/format";

const AXIS = { stroke: "#8a94a6", fontSize: 11 } as const;
const GRID = "#2a3140";
const TOOLTIP_STYLE = { background: "#141a24", border: "1px solid #2a3140", fontSize: 12 } as const;

/**
 * A zero-based linear scale with round ticks: the step is 1, 2, 2.5 or 5 × 10^k, about four steps
 * to the top. Recharts' own tick choice gives labels like 95/190/285 for live data.
 */
function niceScale(values: readonly (number | null | undefined)[]): { domain: [number, number]; ticks: number[] } {
  const max = Math.max(0, ...values.filter((v): v is number => v != null && Number.isFinite(v)));
  if (max <= 0) return { domain: [0, 1], ticks: [0, 0.25, 0.5, 0.75, 1] };
  const rough = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * magnitude >= rough) ?? 10) * magnitude;
  const top = step * Math.ceil(max / step);
  const ticks: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return { domain: [0, top], ticks };
}

/** Axis ticks in ms: short labels ("800 ms", "16 s") so a narrow axis does not wrap them. */
const msTick = (v: number): string => (Math.abs(v) >= 1000 ? `${+(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);

function ChartFrame({ height = 220, testId, children }: { height?: number; testId?: string; children: React.ReactElement }) {
  return (
    <div className="chart" data-testid={testId} style={{ height }}>
      <ResponsiveContainer width="100%" height="100%">
        {children}
      </ResponsiveContainer>
    </div>
  );
}

type TimePoint = { t: number | string | Date };

/**
 * The points worth plotting: from the first one with data (a fresh console's axis starts at its first
 * traffic) up to, but not including, the newest bucket, which is still filling and would show a
 * spurious dip in rates or a jump in shares.
 */
function fromFirst<T>(rows: readonly T[], hasData: (row: T) => boolean): readonly T[] {
  const first = rows.findIndex(hasData);
  if (first < 0) return [];
  const complete = rows.length - first > 2 ? rows.slice(first, -1) : rows.slice(first);
  return complete;
}
function timeSeries<T extends TimePoint>(rows: readonly T[]): (Omit<T, "t"> & { t: number })[] {
  return rows.map((r) => ({ ...r, t: toEpochMs(r.t) }));
}

export function TtftChart({ series }: { series: readonly { t: number | string | Date; p50: number | null; p95: number | null }[] }) {
  const data = timeSeries(fromFirst(series, (p) => p.p50 != null || p.p95 != null));
  const y = niceScale(data.flatMap((p) => [p.p50, p.p95]));
  return (
    <ChartFrame testId="chart-ttft">
      <LineChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis dataKey="t" type="number" domain={["dataMin", "dataMax"]} tickFormatter={fmtClock} {...AXIS} />
        <YAxis tickFormatter={msTick} width={56} domain={y.domain} ticks={y.ticks} {...AXIS} />
        <Tooltip contentStyle={TOOLTIP_STYLE} labelFormatter={(v) => fmtClock(Number(v))} formatter={(v) => `${Math.round(Number(v))} ms`} />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        <Line type="linear" dataKey="p50" name="TTFT p50" stroke="#59a14f" dot={false} isAnimationActive={false} connectNulls />
        <Line type="linear" dataKey="p95" name="TTFT p95" stroke="#f28e2b" dot={false} isAnimationActive={false} connectNulls />
      </LineChart>
    </ChartFrame>
  );
}

/** Requests and failed requests, both per second over each bucket (the server divides both alike). */
export function RequestsChart({ series }: { series: readonly { t: number | string | Date; rps: number; errorsPerS: number }[] }) {
  const data = timeSeries(fromFirst(series, (p) => p.rps > 0 || p.errorsPerS > 0));
  const y = niceScale(data.flatMap((p) => [p.rps, p.errorsPerS]));
  return (
    <ChartFrame testId="chart-requests" height={160}>
      <LineChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis dataKey="t" type="number" domain={["dataMin", "dataMax"]} tickFormatter={fmtClock} {...AXIS} />
        <YAxis width={56} domain={y.domain} ticks={y.ticks} {...AXIS} />
        <Tooltip contentStyle={TOOLTIP_STYLE} labelFormatter={(v) => fmtClock(Number(v))} formatter={(v) => fmtNum(Number(v), 2)} />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        <Line type="linear" dataKey="rps" name="requests/s" stroke="#4e79a7" dot={false} isAnimationActive={false} />
        <Line type="linear" dataKey="errorsPerS" name="errors/s" stroke="#e15759" dot={false} isAnimationActive={false} />
      </LineChart>
    </ChartFrame>
  );
}

/**
 * Each replica's share of the requests routed per bucket, as stacked bands that fill to 100%: six or
 * seven overlapping lines were unreadable, while stacked shares show both who carries how much and
 * how the whole splits. A bucket with no routed request is a gap, not a 0% band.
 */
export function ShareHistoryChart({
  history,
  replicas,
}: {
  history: readonly { t: number | string | Date; shares: Record<string, number> }[];
  replicas: readonly { id: string; name: string }[];
}) {
  // A replica absent from a bucket that routed requests served nothing in it: 0, so a drained replica
  // visibly thins to nothing.
  const data = fromFirst(history, (h) => Object.keys(h.shares).length > 0).map((h) => {
    const routed = Object.keys(h.shares).length > 0;
    const point: Record<string, number | null> = { t: toEpochMs(h.t) };
    for (const r of replicas) point[r.id] = routed ? (h.shares[r.id] ?? 0) : null;
    return point;
  });
  return (
    <ChartFrame testId="chart-share-history" height={260}>
      <AreaChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis dataKey="t" type="number" domain={["dataMin", "dataMax"]} tickFormatter={fmtClock} {...AXIS} />
        <YAxis domain={[0, 1]} ticks={[0, 0.25, 0.5, 0.75, 1]} tickFormatter={(v: number) => `${Math.round(v * 100)}%`} width={48} {...AXIS} />
        <Tooltip
          contentStyle={TOOLTIP_STYLE}
          labelFormatter={(v) => fmtClock(Number(v))}
          formatter={(v) => (v == null ? "—" : `${(Number(v) * 100).toFixed(1)}%`)}
          itemSorter={(item) => -Number(item.value ?? 0)}
        />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        {replicas.map((r, i) => (
          <Area
            key={r.id}
            type="linear"
            dataKey={r.id}
            name={r.name}
            stackId="share"
            stroke={seriesColor(i)}
            fill={seriesColor(i)}
            fillOpacity={0.55}
            strokeWidth={1}
            isAnimationActive={false}
          />
        ))}
      </AreaChart>
    </ChartFrame>
  );
}

/** Compact token counts for a narrow axis: "12k", "1.5M". */
const tokenTick = (v: number): string => (v >= 1e6 ? `${+(v / 1e6).toFixed(1)}M` : v >= 1e3 ? `${+(v / 1e3).toFixed(1)}k` : `${Math.round(v)}`);

/**
 * Predicted vs reported cached tokens over time, one small chart per replica. The two lines track
 * each other while the LB's index knows the engine's cache; a restart or a flushed cache shows as the
 * predicted line standing far above the reported one.
 */
export function CacheTruthCharts({
  history,
  replicas,
}: {
  history: readonly { t: number | string | Date; replicas: Record<string, { predicted: number; actual: number }> }[];
  replicas: readonly { id: string; name: string }[];
}) {
  const rows = fromFirst(history, (h) => Object.keys(h.replicas).length > 0);
  return (
    <div className="chart-grid">
      {replicas.map((r) => {
        const data = rows.map((h) => {
          const point = h.replicas[r.id];
          return { t: toEpochMs(h.t), predicted: point?.predicted ?? null, actual: point?.actual ?? null };
        });
        const y = niceScale(data.flatMap((p) => [p.predicted, p.actual]));
        return (
          <div key={r.id}>
            <div className="muted small">{r.name}</div>
            <ChartFrame testId={`chart-cache-${r.name}`} height={160}>
              <LineChart data={data} margin={{ top: 8, right: 12, bottom: 0, left: 0 }}>
                <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
                <XAxis dataKey="t" type="number" domain={["dataMin", "dataMax"]} tickFormatter={fmtClock} {...AXIS} />
                <YAxis tickFormatter={tokenTick} width={44} domain={y.domain} ticks={y.ticks} {...AXIS} />
                <Tooltip contentStyle={TOOLTIP_STYLE} labelFormatter={(v) => fmtClock(Number(v))} formatter={(v) => tokenTick(Number(v))} />
                <Legend wrapperStyle={{ fontSize: 11 }} />
                <Line type="linear" dataKey="predicted" name="predicted" stroke={seriesColor(0)} dot={false} isAnimationActive={false} connectNulls />
                <Line type="linear" dataKey="actual" name="reported" stroke={seriesColor(2)} dot={false} isAnimationActive={false} connectNulls />
              </LineChart>
            </ChartFrame>
          </div>
        );
      })}
    </div>
  );
}

type StepPoint = {
  step: number;
  fitnessP95TtftMs: number | null;
  sigma: number;
  accepted: boolean;
  weights: { rtt: number; queue: number };
  guardrail?: string | null;
};

const FITNESS_NAME = "p95 TTFT";

/** Fitness per step, accepted and rejected candidates as two series so the eye separates them. */
export function FitnessChart({ steps }: { steps: readonly StepPoint[] }) {
  const scored = steps.filter((s) => s.fitnessP95TtftMs != null);
  const accepted = scored.filter((s) => s.accepted).map((s) => ({ step: s.step, ttft: s.fitnessP95TtftMs }));
  const rejected = scored.filter((s) => !s.accepted).map((s) => ({ step: s.step, ttft: s.fitnessP95TtftMs, guardrail: s.guardrail ?? "" }));
  const y = niceScale(scored.map((s) => s.fitnessP95TtftMs));
  return (
    <ChartFrame testId="chart-fitness">
      <ScatterChart margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis dataKey="step" type="number" name="step" allowDecimals={false} domain={["dataMin", "dataMax"]} {...AXIS} />
        <YAxis dataKey="ttft" type="number" name={FITNESS_NAME} tickFormatter={msTick} width={56} domain={y.domain} ticks={y.ticks} {...AXIS} />
        <ZAxis range={[36, 36]} />
        {/* The tooltip lists both axes: the step as is, the p95 TTFT in ms like every other chart. */}
        <Tooltip
          contentStyle={TOOLTIP_STYLE}
          cursor={{ strokeDasharray: "3 3" }}
          formatter={(v, name) => (name === FITNESS_NAME ? fmtMs(Number(v)) : String(v))}
        />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        <Scatter name="accepted" data={accepted} fill="#59a14f" isAnimationActive={false} />
        <Scatter name="rejected" data={rejected} fill="#e15759" shape="cross" isAnimationActive={false} />
      </ScatterChart>
    </ChartFrame>
  );
}

export function SigmaChart({ steps, sigmaMin = 0.05 }: { steps: readonly StepPoint[]; sigmaMin?: number }) {
  const data = steps.map((s) => ({ step: s.step, sigma: s.sigma }));
  return (
    <ChartFrame testId="chart-sigma" height={180}>
      <LineChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis dataKey="step" type="number" allowDecimals={false} domain={["dataMin", "dataMax"]} {...AXIS} />
        <YAxis width={48} domain={[0, "auto"]} {...AXIS} />
        <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => Number(v).toFixed(3)} />
        {/* Below σ_min the tuner declares convergence; shading makes that threshold visible. */}
        <ReferenceArea y1={0} y2={sigmaMin} fill="#59a14f" fillOpacity={0.08} />
        <Line type="stepAfter" dataKey="sigma" name="σ" stroke="#b07aa1" dot={false} isAnimationActive={false} />
      </LineChart>
    </ChartFrame>
  );
}

// Weight axes are logarithmic: the bounds span three decades and the tuner steps multiplicatively.

/** A weight's axis over its search bounds, padded so that points on a bound are drawn inside. */
function weightAxis(bounds: readonly [number, number]) {
  return { type: "number", scale: "log", domain: [bounds[0] / 1.2, bounds[1] * 1.2], allowDataOverflow: true, tickFormatter: fmtWeightTick } as const;
}

/** The ES path in (W_rtt, W_queue) space, drawn inside the search bounds. */
export function WeightTrajectoryChart({
  steps,
  bounds,
  current,
}: {
  steps: readonly StepPoint[];
  bounds: { rtt: readonly [number, number]; queue: readonly [number, number] };
  current: { rtt: number; queue: number };
}) {
  const point = (s: StepPoint) => ({ rtt: s.weights.rtt, queue: s.weights.queue, step: s.step });
  const accepted = steps.filter((s) => s.accepted).map(point);
  const rejected = steps.filter((s) => !s.accepted).map(point);
  return (
    <ChartFrame testId="chart-trajectory" height={260}>
      <ScatterChart margin={{ top: 8, right: 16, bottom: 16, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" />
        <XAxis
          dataKey="rtt"
          name="W_rtt"
          {...weightAxis(bounds.rtt)}
          label={{ value: "W_rtt", position: "insideBottom", offset: -8, fill: "#8a94a6", fontSize: 11 }}
          {...AXIS}
        />
        <YAxis dataKey="queue" name="W_queue" {...weightAxis(bounds.queue)} width={48} {...AXIS} />
        <ZAxis range={[30, 30]} />
        <Tooltip contentStyle={TOOLTIP_STYLE} formatter={(v) => Number(v).toFixed(3)} />
        <Legend wrapperStyle={{ fontSize: 12 }} verticalAlign="top" />
        <ReferenceArea
          x1={bounds.rtt[0]}
          x2={bounds.rtt[1]}
          y1={bounds.queue[0]}
          y2={bounds.queue[1]}
          fill="#4e79a7"
          fillOpacity={0.06}
          stroke="#4e79a7"
          strokeOpacity={0.4}
        />
        <Scatter name="rejected" data={rejected} fill="#e15759" fillOpacity={0.5} shape="cross" isAnimationActive={false} />
        <Scatter name="accepted path" data={accepted} fill="#59a14f" line={{ stroke: "#59a14f", strokeWidth: 1.5 }} isAnimationActive={false} />
        <Scatter name="current" data={[current]} fill="#edc948" shape="star" isAnimationActive={false} />
      </ScatterChart>
    </ChartFrame>
  );
}

export function PolicyBarChart({
  data,
  metrics,
  testId,
  unit,
  percent,
}: {
  data: readonly Record<string, string | number | null>[];
  metrics: readonly { key: string; label: string }[];
  testId: string;
  unit?: string;
  percent?: boolean;
}) {
  const y = percent
    ? { domain: [0, 1] as [number, number], ticks: [0, 0.25, 0.5, 0.75, 1] }
    : niceScale(data.flatMap((row) => metrics.map((m) => Number(row[m.key]))));
  return (
    <ChartFrame testId={testId} height={220}>
      <BarChart data={[...data]} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke={GRID} strokeDasharray="3 3" vertical={false} />
        <XAxis dataKey="name" {...AXIS} interval={0} />
        <YAxis
          width={56}
          domain={y.domain}
          ticks={y.ticks}
          tickFormatter={percent ? (v: number) => `${Math.round(v * 100)}%` : unit === " ms" ? msTick : undefined}
          {...AXIS}
        />
        <Tooltip
          contentStyle={TOOLTIP_STYLE}
          cursor={{ fill: "#ffffff10" }}
          formatter={(v) => (percent ? `${(Number(v) * 100).toFixed(1)}%` : unit === " ms" ? fmtMs(Number(v)) : `${Math.round(Number(v))}${unit ?? ""}`)}
        />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        {metrics.map((m, i) => (
          <Bar key={m.key} dataKey={m.key} name={m.label} fill={seriesColor(i)} isAnimationActive={false} />
        ))}
      </BarChart>
    </ChartFrame>
  );
}
