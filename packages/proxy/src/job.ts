// One inference request as the balancer carries it from arrival to its last byte: the client's
// request and response, the core's ticket, the upstream exchange in progress and its first-byte plan.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FirstBytePlan, Ticket } from "@meridian/lb-core";
import type { InferenceClient } from "./client-entrance";
import { upstreamBody, type InferenceKind, type ParsedInference } from "./request";
import type { UpstreamExchange } from "./upstream";

export interface Job {
  kind: InferenceKind;
  path: string;
  req: IncomingMessage;
  res: ServerResponse;
  request: ParsedInference;
  /** Who sent it (client key or peer) and what of its Authorization goes upstream. */
  client: InferenceClient;
  ticket: Ticket<Job>;
  /** Body for replicas and peers (usage requested on streams). */
  body: Buffer | Buffer[];
  /** performance.now() at arrival, for TTFT and E2E. */
  arrival: number;
  exchange: UpstreamExchange<Job> | null;
  /** The current dispatch's first-byte deadline and what it was derived from. */
  plan: FirstBytePlan | null;
  clientGone: boolean;
  done: boolean;
}

/** A job as it arrives, before the core admits it (its ticket is set right after). */
export function newJob(arrived: Pick<Job, "kind" | "path" | "req" | "res" | "request" | "client" | "arrival">): Job {
  return { ...arrived, body: upstreamBody(arrived.request), exchange: null, plan: null, clientGone: false, done: false } as Omit<Job, "ticket"> as Job;
}
