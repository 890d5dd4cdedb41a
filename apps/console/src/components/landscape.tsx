"use client";
// The (W_rtt, W_queue) landscape from `meridian-sim grid` as a heatmap: both axes in log space (the
// space the tuner searches), colour by p95 TTFT on a log scale, the grid optimum ringed, and on top
// of it the tuner's incumbent and its trajectory (accepted steps joined, rejected ones crossed).
// Plain SVG: a 9×9 grid is 81 rectangles, and recharts has no heatmap.
import { fmtMs, fmtWeightTick } from "../lib/format";

export interface LandscapePoint {
  rtt: number;
  queue: number;
  ttft_ms: { p95: number | null };
}

export interface TrajectoryPoint {
  step: number;
  weights: { rtt: number; queue: number };
  accepted: boolean;
}

const W = 420;
const H = 360;
const PAD = { left: 56, right: 12, top: 12, bottom: 44 };

/** Green (fast) → yellow → red (slow), by position in [0, 1]. */
function heat(t: number): string {
  const clamped = Math.min(1, Math.max(0, t));
  const hue = 120 * (1 - clamped);
  return `hsl(${hue.toFixed(0)} 65% ${(38 + 10 * (1 - Math.abs(clamped - 0.5) * 2)).toFixed(0)}%)`;
}

function distinct(values: readonly number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}

export function LandscapeHeatmap({
  points,
  optimum,
  incumbent,
  trajectory = [],
  testId = "landscape-heatmap",
}: {
  points: readonly LandscapePoint[];
  optimum: { rtt: number; queue: number } | null;
  incumbent?: { rtt: number; queue: number } | null;
  trajectory?: readonly TrajectoryPoint[];
  testId?: string;
}) {
  const rtts = distinct(points.map((p) => p.rtt));
  const queues = distinct(points.map((p) => p.queue));
  if (rtts.length === 0 || queues.length === 0) return <div className="state state-empty">No landscape points.</div>;
  const p95s = points.map((p) => p.ttft_ms.p95).filter((v): v is number => v != null && v > 0);
  const lo = Math.log(Math.min(...p95s));
  const hi = Math.log(Math.max(...p95s));
  // Cell edges halfway (in log space) between neighbouring grid values.
  const edges = (values: number[]) => {
    const logs = values.map(Math.log);
    const step = logs.length > 1 ? logs[1]! - logs[0]! : 1;
    return { min: logs[0]! - step / 2, max: logs.at(-1)! + step / 2, step };
  };
  const ex = edges(rtts);
  const ey = edges(queues);
  const x = (rtt: number) => PAD.left + ((Math.log(rtt) - ex.min) / (ex.max - ex.min)) * (W - PAD.left - PAD.right);
  const y = (queue: number) => H - PAD.bottom - ((Math.log(queue) - ey.min) / (ey.max - ey.min)) * (H - PAD.top - PAD.bottom);
  const cellW = ((W - PAD.left - PAD.right) * ex.step) / (ex.max - ex.min);
  const cellH = ((H - PAD.top - PAD.bottom) * ey.step) / (ey.max - ey.min);
  const inside = (w: { rtt: number; queue: number }) =>
    Math.log(w.rtt) >= ex.min && Math.log(w.rtt) <= ex.max && Math.log(w.queue) >= ey.min && Math.log(w.queue) <= ey.max;
  const path = trajectory.filter((s) => s.accepted && inside(s.weights));
  const rejected = trajectory.filter((s) => !s.accepted && inside(s.weights));
  return (
    <figure className="landscape" data-testid={testId}>
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" role="img" aria-label="p95 TTFT over W_rtt and W_queue">
        {points.map((p) => {
          const v = p.ttft_ms.p95;
          const t = v == null || hi === lo ? 0.5 : (Math.log(v) - lo) / (hi - lo);
          return (
            <rect
              key={`${p.rtt}/${p.queue}`}
              x={x(p.rtt) - cellW / 2}
              y={y(p.queue) - cellH / 2}
              width={cellW}
              height={cellH}
              fill={v == null ? "#333" : heat(t)}
              data-testid="landscape-cell"
            >
              <title>{`W_rtt ${fmtWeightTick(p.rtt)}, W_queue ${fmtWeightTick(p.queue)}: p95 TTFT ${fmtMs(v)}`}</title>
            </rect>
          );
        })}
        {rtts.map((r) => (
          <text key={`x${r}`} x={x(r)} y={H - PAD.bottom + 14} fontSize={10} fill="#8a94a6" textAnchor="middle">
            {fmtWeightTick(r)}
          </text>
        ))}
        {queues.map((q) => (
          <text key={`y${q}`} x={PAD.left - 6} y={y(q) + 3} fontSize={10} fill="#8a94a6" textAnchor="end">
            {fmtWeightTick(q)}
          </text>
        ))}
        <text x={(PAD.left + W - PAD.right) / 2} y={H - 8} fontSize={11} fill="#8a94a6" textAnchor="middle">
          W_rtt (log)
        </text>
        <text
          x={12}
          y={(PAD.top + H - PAD.bottom) / 2}
          fontSize={11}
          fill="#8a94a6"
          textAnchor="middle"
          transform={`rotate(-90 12 ${(PAD.top + H - PAD.bottom) / 2})`}
        >
          W_queue (log)
        </text>
        {path.length > 1 ? (
          <polyline
            points={path.map((s) => `${x(s.weights.rtt)},${y(s.weights.queue)}`).join(" ")}
            fill="none"
            stroke="#ffffff"
            strokeWidth={1.5}
            strokeOpacity={0.8}
            data-testid="landscape-trajectory"
          />
        ) : null}
        {path.map((s) => (
          <circle key={`a${s.step}`} cx={x(s.weights.rtt)} cy={y(s.weights.queue)} r={3} fill="#ffffff" />
        ))}
        {rejected.map((s) => (
          <g key={`r${s.step}`} stroke="#111" strokeWidth={1.2} strokeOpacity={0.7}>
            <line x1={x(s.weights.rtt) - 3} y1={y(s.weights.queue) - 3} x2={x(s.weights.rtt) + 3} y2={y(s.weights.queue) + 3} />
            <line x1={x(s.weights.rtt) - 3} y1={y(s.weights.queue) + 3} x2={x(s.weights.rtt) + 3} y2={y(s.weights.queue) - 3} />
          </g>
        ))}
        {optimum && inside(optimum) ? (
          <circle cx={x(optimum.rtt)} cy={y(optimum.queue)} r={cellH / 3} fill="none" stroke="#ffffff" strokeWidth={2} data-testid="landscape-optimum">
            <title>grid optimum</title>
          </circle>
        ) : null}
        {incumbent && inside(incumbent) ? (
          <text
            x={x(incumbent.rtt)}
            y={y(incumbent.queue) + 5}
            fontSize={16}
            fill="#edc948"
            stroke="#111"
            strokeWidth={0.6}
            textAnchor="middle"
            data-testid="landscape-incumbent"
          >
            ★<title>tuner incumbent</title>
          </text>
        ) : null}
      </svg>
      <figcaption className="muted small">
        Colour: p95 TTFT from {fmtMs(Math.exp(lo))} (green) to {fmtMs(Math.exp(hi))} (red), log scale. ◯ grid optimum, ★ tuner incumbent, white path: accepted
        steps, ×: rejected candidates.
      </figcaption>
    </figure>
  );
}
