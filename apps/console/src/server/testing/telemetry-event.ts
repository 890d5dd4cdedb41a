// One builder for the TelemetryEvents the console tests feed in (fake LB streams, tuner windows,
// rolling stats): a complete, schema-valid 200 event whose fields a test overrides as it needs.
import "server-only";
import { TELEMETRY_EVENT_SCHEMA, type TelemetryEvent } from "@meridian/protocol";

export function telemetryEvent(fields: Pick<TelemetryEvent, "seq" | "time" | "lbId" | "region"> & Partial<TelemetryEvent>): TelemetryEvent {
  return {
    schema: TELEMETRY_EVENT_SCHEMA,
    replicaId: "r1",
    configVersion: 1,
    policy: "gorgo",
    inputTokens: 100,
    predictedCachedTokens: 0,
    actualCachedTokens: 0,
    ttftMs: 100,
    e2eMs: 400,
    outputTokens: 10,
    status: 200,
    error: null,
    forwarded: false,
    hop: 0,
    ...fields,
  };
}
