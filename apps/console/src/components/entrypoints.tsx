"use client";
// The entrypoint map (which LB each region's clients are sent to) and the alarm shown when a region
// is not served by its own LB: a fallback to another region's LB, or no healthy LB at all. The
// server decides (src/server/runtime/entrypoint-resolver.ts); this only shows it.
import type { RouterOutputs } from "../trpc/app-router";
import { fmtMs } from "../lib/format";
import { Badge } from "./ui";

type Entrypoint = RouterOutputs["lbs"]["entrypoints"][string];

/** A banner naming every region whose clients do not go to their assigned LB; nothing when all do. */
export function EntrypointAlarms({ entrypoints }: { entrypoints: readonly Entrypoint[] }) {
  const off = entrypoints.filter((e) => e.status !== "assigned");
  if (off.length === 0) return null;
  const unresolved = off.some((e) => e.status === "unresolved");
  return (
    <div className={`alarm ${unresolved ? "alarm-bad" : "alarm-warn"}`} role="alert" data-testid="entrypoint-alarms">
      {off.map((e) => (
        <div key={e.region} data-testid={`entrypoint-alarm-${e.region}`}>
          <strong>{e.region}</strong>: {e.status === "unresolved" ? "no LB takes its clients. " : ""}
          {e.reason}
        </div>
      ))}
    </div>
  );
}

export function EntrypointTable({ entrypoints, lbNames }: { entrypoints: readonly Entrypoint[]; lbNames: ReadonlyMap<string, string> }) {
  const name = (id: string | null) => (id === null ? "—" : (lbNames.get(id) ?? id));
  return (
    <table className="table compact" data-testid="entrypoint-table">
      <thead>
        <tr>
          <th>Region</th>
          <th>Assigned LB</th>
          <th>Clients go to</th>
          <th>URL</th>
        </tr>
      </thead>
      <tbody>
        {entrypoints.map((e) => (
          <tr key={e.region} data-testid={`entrypoint-${e.region}`} data-lb-id={e.lbId ?? undefined} data-status={e.status}>
            <td>{e.region}</td>
            <td>{name(e.assignedLbId)}</td>
            <td data-testid={`entrypoint-lb-${e.region}`}>
              {e.status === "unresolved" ? (
                <Badge tone="bad">no healthy LB</Badge>
              ) : (
                <>
                  {name(e.lbId)}
                  {e.status === "fallback" ? (
                    <>
                      {" "}
                      <span title={e.reason ?? undefined}>
                        <Badge tone="warn">fallback{e.rttMs !== null ? `, ${fmtMs(e.rttMs)} away` : ""}</Badge>
                      </span>
                    </>
                  ) : null}
                </>
              )}
            </td>
            <td className="mono">{e.url ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
