"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtMs, fmtNum, fmtPct, fmtWeight } from "../lib/format";
import { REPLICA_STATS_WINDOW_MS, windowLabel } from "../lib/stats-windows";
import { RequestsChart, TtftChart } from "./charts";
import { EntrypointAlarms } from "./entrypoints";
import { HealthBadge, LbStatusBadge, PageHeader, Panel, QueryView, ShareBar, Stat, StateBadge } from "./ui";

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
          // The newest bucket may still be empty; the stat shows the latest bucket that measured something.
          const last = d.ttftSeries.findLast((p) => p.p50 != null || p.p95 != null);
          return (
            <>
              <EntrypointAlarms entrypoints={d.entrypoints} />
              <div className="stats">
                <Stat label="Requests/s" value={fmtNum(d.rps, 1)} testId="stat-rps" />
                <Stat label="Error rate" value={fmtPct(d.errorRate, 2)} testId="stat-error-rate" tone={d.errorRate > 0.01 ? "bad" : undefined} />
                <Stat label="TTFT p50" value={fmtMs(last?.p50)} testId="stat-ttft-p50" />
                <Stat label="TTFT p95" value={fmtMs(last?.p95)} testId="stat-ttft-p95" />
                <Stat label="Regions" value={d.regions.length} testId="stat-regions" />
                <Stat label="Replicas" value={d.regions.reduce((n, r) => n + r.replicas.length, 0)} testId="stat-replicas" />
              </div>
              <div className="grid-2">
                <Panel title="Global TTFT (rolling)">
                  {d.ttftSeries.length === 0 ? <div className="state state-empty">No traffic measured yet.</div> : <TtftChart series={d.ttftSeries} />}
                </Panel>
                <Panel title="Requests and errors per second">
                  {d.requestSeries.length === 0 ? (
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
            </>
          );
        }}
      </QueryView>
    </div>
  );
}
