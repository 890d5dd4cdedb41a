"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtAgo, fmtClock, fmtMs, fmtNum, fmtPct, fmtWeight } from "../lib/format";
import { hasRequests, hasTtft } from "../lib/series";
import { LATEST_TTFT_MAX_AGE_MS, REPLICA_STATS_WINDOW_MS, windowLabel } from "../lib/stats-windows";
import { RequestsChart, TtftChart } from "./charts";
import { EntrypointAlarms } from "./entrypoints";
import { Badge, HealthBadge, LbStatusBadge, PageHeader, Panel, QueryView, ShareBar, Stat, StateBadge } from "./ui";

type Summary = RouterOutputs["overview"]["summary"];

/**
 * Under a TTFT stat: when the bucket it shows ended, or that none ended in the last minute (the
 * stats then show a dash rather than a figure minutes old).
 */
export function TtftAge({ latest, testId }: { latest: Summary["ttftLatest"]; testId?: string }) {
  if (!latest?.recent) {
    const title = latest
      ? `The newest bucket that measured a TTFT ended ${fmtAgo(latest.ageMs)} (older than ${windowLabel(LATEST_TTFT_MAX_AGE_MS)}).`
      : undefined;
    return (
      <span className="stat-note" data-testid={testId} title={title}>
        no recent data
      </span>
    );
  }
  return (
    <span
      className="stat-note"
      data-testid={testId}
      title={`The ${windowLabel(latest.bucketMs)} from ${fmtClock(latest.t)} to ${fmtClock(latest.t + latest.bucketMs)}: the newest complete bucket that measured a TTFT`}
    >
      {windowLabel(latest.bucketMs)} ended {fmtAgo(latest.ageMs)}
    </span>
  );
}

/** Each LB's telemetry stream into this console: open or not, events received and lost, lag, last error. */
function TelemetryPanel({ regions, telemetry }: { regions: Summary["regions"]; telemetry: Summary["telemetry"] }) {
  const byLb = new Map(telemetry.map((s) => [s.lbId, s]));
  const lbs = regions.flatMap((r) => r.lbs);
  return (
    <Panel title="Telemetry streams" testId="overview-telemetry">
      {lbs.length === 0 ? (
        <div className="muted small">No LB yet.</div>
      ) : (
        <table className="table compact">
          <thead>
            <tr>
              <th>LB</th>
              <th>Stream</th>
              <th className="num">Events</th>
              <th
                className="num"
                title="Events the LB no longer held when this console asked for them (its ring had moved on): lost to the charts and the tuner"
              >
                Dropped
              </th>
              <th className="num" title="How late the last event arrived (receipt minus the event's own time)">
                Lag
              </th>
              <th>Last error</th>
            </tr>
          </thead>
          <tbody>
            {lbs.map((lb) => {
              const s = byLb.get(lb.id);
              return (
                <tr key={lb.id} data-testid={`overview-telemetry-${lb.name}`}>
                  <td>{lb.name}</td>
                  <td>
                    {!s ? (
                      <span title="This console holds no telemetry subscription to this LB (only the leading console subscribes)">
                        <Badge tone="neutral" testId={`overview-telemetry-stream-${lb.name}`}>
                          no stream
                        </Badge>
                      </span>
                    ) : (
                      <Badge tone={s.connected ? "ok" : "bad"} testId={`overview-telemetry-stream-${lb.name}`}>
                        {s.connected ? "connected" : `disconnected${s.reconnects > 0 ? ` (${s.reconnects} retries)` : ""}`}
                      </Badge>
                    )}
                  </td>
                  <td className="num">{s ? fmtNum(s.events) : "—"}</td>
                  <td className="num" data-testid={`overview-telemetry-dropped-${lb.name}`}>
                    {!s ? "—" : s.dropped > 0 ? <Badge tone="warn">{fmtNum(s.dropped)}</Badge> : "0"}
                  </td>
                  <td className="num">{fmtMs(s?.lastEventLagMs)}</td>
                  <td className="muted small" title={s?.lastError ?? undefined} data-testid={`overview-telemetry-error-${lb.name}`}>
                    {!s?.lastError ? "—" : s.lastError.length > 80 ? `${s.lastError.slice(0, 80)}…` : s.lastError}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Panel>
  );
}

export function OverviewPage() {
  const trpc = useTRPC();
  const summary = useQuery({ ...trpc.overview.summary.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });

  return (
    <div data-testid="page-overview">
      <PageHeader title="Overview" subtitle="Regions, their load balancers and replicas, and global latency." />
      <QueryView
        query={summary}
        isEmpty={(d) => d.regions.length === 0}
        empty={
          <>
            No regions yet. <Link href="/regions">Create one</Link>.
          </>
        }
      >
        {(d) => {
          // The newest complete bucket that measured a TTFT (never the one still filling), while recent.
          const ttft = d.ttftLatest?.recent ? d.ttftLatest : null;
          return (
            <>
              <EntrypointAlarms entrypoints={d.entrypoints} />
              <div className="stats">
                <Stat label="Requests/s" value={fmtNum(d.rps, 1)} testId="stat-rps" />
                <Stat
                  label="Error rate"
                  value={fmtPct(d.errorRate, 2)}
                  testId="stat-error-rate"
                  tone={d.errorRate !== null && d.errorRate > 0.01 ? "bad" : undefined}
                />
                {(["p50", "p95"] as const).map((q) => (
                  <Stat
                    key={q}
                    label={`TTFT ${q}`}
                    value={
                      <>
                        {fmtMs(ttft?.[q])}
                        <TtftAge latest={d.ttftLatest} testId={`stat-ttft-${q}-age`} />
                      </>
                    }
                    testId={`stat-ttft-${q}`}
                  />
                ))}
                <Stat label="Regions" value={d.regions.length} testId="stat-regions" />
                <Stat label="Replicas" value={d.regions.reduce((n, r) => n + r.replicas.length, 0)} testId="stat-replicas" />
              </div>
              <div className="grid-2">
                <Panel title="Global TTFT (rolling)">
                  {!hasTtft(d.ttftSeries) ? <div className="state state-empty">No traffic measured yet.</div> : <TtftChart series={d.ttftSeries} />}
                </Panel>
                <Panel title="Requests and errors per second">
                  {!hasRequests(d.requestSeries) ? (
                    <div className="state state-empty">No traffic measured yet.</div>
                  ) : (
                    <RequestsChart series={d.requestSeries} />
                  )}
                </Panel>
              </div>
              <div className="region-grid" data-testid="region-list">
                {d.regions.map((region) => (
                  <Panel key={region.id} title={region.name} testId={`region-card-${region.name}`} className="region-card">
                    <h3 className="subhead">Load balancers</h3>
                    {region.lbs.length === 0 ? (
                      <div className="muted small">No LB in this region.</div>
                    ) : (
                      <table className="table compact">
                        <thead>
                          <tr>
                            <th>LB</th>
                            <th>State</th>
                            <th>Policy</th>
                            <th>Cross-region</th>
                            <th>W_rtt</th>
                            <th>W_queue</th>
                            <th>Config</th>
                          </tr>
                        </thead>
                        <tbody>
                          {region.lbs.map((lb) => (
                            <tr key={lb.id} data-testid={`overview-lb-${lb.name}`}>
                              <td>
                                <Link href={`/lbs#${lb.id}`}>{lb.name}</Link>
                              </td>
                              <td>
                                <LbStatusBadge lb={lb} />
                              </td>
                              <td className="mono">{lb.policy}</td>
                              <td>{lb.crossRegion}</td>
                              <td className="num">{fmtWeight(lb.weights.rtt)}</td>
                              <td className="num">{fmtWeight(lb.weights.queue)}</td>
                              <td className="num">v{lb.configVersion}</td>
                            </tr>
                          ))}
                        </tbody>
                      </table>
                    )}
                    <h3 className="subhead">Replicas</h3>
                    {region.replicas.length === 0 ? (
                      <div className="muted small">No replica in this region.</div>
                    ) : (
                      <table className="table compact">
                        <thead>
                          <tr>
                            <th>Replica</th>
                            <th>State</th>
                            <th>Health</th>
                            <th title={`Share of the requests routed over the last ${windowLabel(REPLICA_STATS_WINDOW_MS)} (a trailing window)`}>
                              Share, {windowLabel(REPLICA_STATS_WINDOW_MS)}
                            </th>
                          </tr>
                        </thead>
                        <tbody>
                          {region.replicas.map((r) => (
                            <tr key={r.id} data-testid={`overview-replica-${r.name}`}>
                              <td>{r.name}</td>
                              <td>
                                <StateBadge state={r.state} />
                              </td>
                              <td>
                                <HealthBadge healthy={r.healthy} />
                              </td>
                              <td className="share-cell">
                                <ShareBar fraction={r.share} testId={`overview-share-${r.name}`} muted={r.state !== "enabled"} />
                              </td>
                            </tr>
                          ))}
                        </tbody>
                      </table>
                    )}
                  </Panel>
                ))}
              </div>
              <TelemetryPanel regions={d.regions} telemetry={d.telemetry} />
            </>
          );
        }}
      </QueryView>
    </div>
  );
}
