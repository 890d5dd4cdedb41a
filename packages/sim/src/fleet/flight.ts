// A simulated request's journey and a simulated replica, as the event loop and the records see them.
import type { EngineModel } from "../engine";
import type { Leg } from "./lb-driver";
import type { SimRequest } from "./workload";

/** One request's journey. */
export interface Flight {
  req: SimRequest;
  /** When its client sent it: req.arrivalMs, or later for a generator turn held until its previous reply reached the client. */
  sentMs: number;
  /** The leg at the LB the client sent to, and the leg that dispatched to a replica (the same unless forwarded). */
  entry: Leg<Flight> | null;
  serving: Leg<Flight> | null;
  replica: ReplicaState | null;
  /** Virtual time the first token reached the entry LB and the serving LB. */
  entryFirstMs: number;
  servingFirstMs: number;
  cachedTokens: number;
  itlMs: number;
}

export interface ReplicaState {
  idx: number;
  id: string;
  region: string;
  engine: EngineModel;
  wakeAt: number;
  wakeGen: number;
  flights: Map<string, Flight>;
  scrapes: number;
  scrapesWithWaiting: number;
}
