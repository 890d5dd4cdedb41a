"use client";
// Which tuner a page shows (the tuner page, the experiments landscape): the fleet's while the scope
// is fleet (it sets every LB's weights; an LB's own tuner waits), an LB's otherwise, or the one the
// operator picked while it still exists.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import type { TunerTarget } from "./tuner-controls";

/** A select's value for the fleet's tuner (an LB id is a slug, never this). */
export const FLEET_OPTION = "*";

/** The select's value (null: no LB yet), what to call on a pick, and whether the fleet is an option.
 * A stale pick (the fleet's once the scope is per LB, an LB deleted meanwhile) falls back to the
 * default, so the page stops asking for a tuner that is gone and the select shows what the page does. */
export function useTunerChoice(lbs: readonly { id: string }[] | undefined, scope: "lb" | "fleet" | undefined) {
  const [selected, setSelected] = useState<string | null>(null);
  const fleetScope = scope === "fleet";
  const stale = selected === FLEET_OPTION ? !fleetScope : selected !== null && lbs !== undefined && !lbs.some((lb) => lb.id === selected);
  const value = (stale ? null : selected) ?? (fleetScope ? FLEET_OPTION : (lbs?.[0]?.id ?? null));
  const target: TunerTarget | null = value === FLEET_OPTION ? { fleet: true } : value !== null ? { lbId: value } : null;
  return { value, target, select: setSelected, fleetScope };
}

/** The fleet's tuner, or an LB's: the same view. null: none is asked for. */
export function useTuner(target: TunerTarget | null, refetchInterval = LIVE_INTERVAL_MS) {
  const trpc = useTRPC();
  const fleet = target !== null && "fleet" in target;
  const lbId = target !== null && "lbId" in target ? target.lbId : "";
  const byLb = useQuery({ ...trpc.tuner.byLb.queryOptions({ lbId }), enabled: lbId !== "", refetchInterval });
  const ofFleet = useQuery({ ...trpc.tuner.fleet.queryOptions(), enabled: fleet, refetchInterval });
  return fleet ? ofFleet : byLb;
}
