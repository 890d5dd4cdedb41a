// console-health: whether the console `npm start` started answers /api/health. Not a CLI; imported by
// scripts/start.mjs. Prints nothing.
//
// Why: start.mjs printed its ready banner for any 2xx on the console's port, so a server already
// there (another console) passed for the one it had just started, which then failed to bind. The
// console echoes MERIDIAN_START_NONCE (random per run) as `startNonce`; only that answer counts.
// Each probe has its own timeout: a server that accepts the connection and never answers must not
// hold the wait past its deadline.

/**
 * GET <consoleUrl>/api/health within timeoutMs: "ours" when it answers 2xx with this run's nonce,
 * "other" when something answers 2xx without it (another server on the port, or a console built
 * before the nonce existed), "none" otherwise.
 */
export async function consoleAnswers(consoleUrl: string, startNonce: string, timeoutMs = 2_000): Promise<"ours" | "other" | "none"> {
  try {
    const res = await fetch(`${consoleUrl}/api/health`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) {
      await res.body?.cancel();
      return "none";
    }
    const body = (await res.json().catch(() => null)) as { startNonce?: unknown } | null;
    return body?.startNonce === startNonce ? "ours" : "other";
  } catch {
    return "none"; // not listening yet, or no answer in time
  }
}
