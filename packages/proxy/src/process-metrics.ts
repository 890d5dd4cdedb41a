// The Node process metrics that every Meridian process exports beside its own (the LB's /metrics and
// the console's): prom-client's default set (process_* CPU, memory, file descriptors, start time;
// nodejs_* event loop lag, heap, GC), registered once per process on a registry of their own and
// merged into each scrape. Once per process, not per LB: a test or the demo may run several LBs in
// one process, and each registration starts its own event-loop and GC observers. The instance lives
// on globalThis because Next loads a module once per bundle.
import { collectDefaultMetrics, Registry } from "prom-client";

const KEY = Symbol.for("meridian.process-metrics");

/** prom-client's three totals over all handle, request and resource types are gauges named
 * `_total`, which `promtool check metrics` rejects; the per-type gauges (nodejs_active_handles{type},
 * and so on) carry the same numbers. */
const NOT_PROMTOOL_CLEAN = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

function processMetricsRegistry(): Registry {
  const holder = globalThis as { [KEY]?: Registry };
  if (!holder[KEY]) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    for (const name of NOT_PROMTOOL_CLEAN) registry.removeSingleMetric(name);
    holder[KEY] = registry;
  }
  return holder[KEY];
}

/** The exposition text of `registry` with the process metrics merged in, and its content type: what
 * every Meridian process answers GET /metrics with. */
export async function renderWithProcessMetrics(registry: Registry): Promise<{ text: string; contentType: string }> {
  const merged = Registry.merge([registry, processMetricsRegistry()]);
  return { text: await merged.metrics(), contentType: merged.contentType };
}
