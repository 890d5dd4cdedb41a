// GET /v1/models and GET /v1/models/{id}: the models this LB's replicas serve, as OpenAI model objects
// (what `client.models.list()` and `client.models.retrieve(id)` read), with Meridian's replica counts
// beside the standard fields.
import type { ServerResponse } from "node:http";
import { failures } from "@meridian/lb-core";
import type { LbConfig } from "@meridian/protocol";
import { httpErrorOf, sendError, sendJson } from "./errors";

export interface ModelCounts {
  id: string;
  replicas: number;
  /** Replicas passing their health probes, whatever their state (a draining replica is healthy). */
  healthy: number;
  /** Replicas taking new requests: healthy and enabled. */
  serving: number;
}

/**
 * When this LB first served each model, in Unix seconds: the OpenAI `created` field. A model keeps
 * its time while any replica serves it, so clients that cache model objects see a stable value; one
 * that leaves the config and comes back gets a new time.
 */
export class ModelCatalog {
  private readonly created = new Map<string, number>();

  /** Records the models of a config applied at `nowMs`. */
  observe(models: Iterable<string>, nowMs: number): void {
    const current = new Set(models);
    for (const id of this.created.keys()) if (!current.has(id)) this.created.delete(id);
    for (const id of current) if (!this.created.has(id)) this.created.set(id, Math.floor(nowMs / 1000));
  }

  createdAt(id: string): number {
    return this.created.get(id) ?? 0;
  }
}

/** The models a config's replicas serve. */
export function modelsOf(config: Pick<LbConfig, "replicas">): string[] {
  return config.replicas.map((r) => r.model);
}

function modelObject(model: ModelCounts, catalog: ModelCatalog) {
  return {
    id: model.id,
    object: "model" as const,
    created: catalog.createdAt(model.id),
    owned_by: "meridian",
    replicas: model.replicas,
    healthy_replicas: model.healthy,
    serving_replicas: model.serving,
  };
}

export function sendModelList(res: ServerResponse, models: readonly ModelCounts[], catalog: ModelCatalog): void {
  sendJson(res, 200, { object: "list", data: models.map((m) => modelObject(m, catalog)) });
}

/** `rawId` is the path segment after /v1/models/, percent-encoded ("org%2Fmodel") or not ("org/model"). */
export function sendModel(res: ServerResponse, rawId: string, models: readonly ModelCounts[], catalog: ModelCatalog): void {
  let id: string;
  try {
    id = decodeURIComponent(rawId);
  } catch {
    id = rawId;
  }
  const model = models.find((m) => m.id === id);
  if (!model) {
    sendError(res, httpErrorOf(failures.modelNotFound(id)));
    return;
  }
  sendJson(res, 200, modelObject(model, catalog));
}
