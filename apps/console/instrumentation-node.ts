// The Node.js half of instrumentation.ts: the peer-address stamp (src/server/auth/peer-address.ts),
// migrations, users from env, the demo topology (MERIDIAN_DEMO=1), HealthMonitor, ConfigPublisher,
// TelemetryHub, TunerService. Skipped during `next build`; the runtime itself lives on globalThis, so
// a second register() (HMR, another bundle) finds it already started. Its timers are unref'd, so the
// server's own SIGTERM handling ends the process; on the way, a leader releases its lease (best
// effort: if Next exits first, the lease expires by itself within MERIDIAN_LEADER_LEASE_MS).
export async function registerNode(): Promise<void> {
  if (process.env.NEXT_PHASE === "phase-production-build") return;
  // Before the first request: route handlers learn each request's TCP peer from this stamp.
  const { installPeerAddressStamp } = await import("./src/server/auth/peer-address");
  installPeerAddressStamp();
  // A bad variable ends the process with status 2 and one line naming it. Thrown from here, Next
  // would log it and serve on, failing every request, so neither `npm start` nor a process manager
  // would learn that the console cannot run.
  const { getEnv } = await import("./src/env");
  try {
    getEnv();
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const { getRuntime } = await import("./src/server/runtime/global");
  const runtime = await getRuntime({ start: true });
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => void runtime.stop());
}
