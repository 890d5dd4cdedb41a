"use client";
// The sidebar's leadership badge. The layout renders it once per navigation; a console dying or a
// failover changes the leader without one, so the badge polls /api/health (the same leader fields
// scripts and Playwright read) on the live pages' interval.
import { useQuery } from "@tanstack/react-query";
import { leadershipFromHealth, leadershipLabel, type LeadershipView } from "../lib/leadership";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";

async function fetchLeadership(): Promise<LeadershipView> {
  const res = await fetch("/api/health", { cache: "no-store", credentials: "same-origin" });
  const view = leadershipFromHealth(await res.json().catch(() => null));
  // An error, not null: react-query then keeps the last answer (or the server's render) on screen.
  if (!view) throw new Error(`/api/health answered ${res.status} without leadership`);
  return view;
}

/** `initial`: the layout's server-rendered view, shown until the first answer. */
export function LeaderBadge({ initial }: { initial: LeadershipView }) {
  const query = useQuery({ queryKey: ["health", "leadership"], queryFn: fetchLeadership, refetchInterval: LIVE_INTERVAL_MS });
  const view = query.data ?? initial;
  return (
    <div className={`leader-badge ${view.isLeader ? "leader-self" : "leader-other"}`} data-testid="leadership" title={`Leadership term ${view.term}`}>
      {leadershipLabel(view)}
    </div>
  );
}
