// console-health: whether the console `npm start` started answers /api/health. Not a CLI; imported by
// scripts/start.mjs. Prints nothing.
//
// Why: start.mjs printed its ready banner for any 2xx on the console's port, so a server already
// there (another console) passed for the one it had just started, which then failed to bind. The
// console echoes MERIDIAN_START_NONCE (random per run) as `startNonce`; only that answer counts.
// Each probe has its own timeout: a server that accepts the connection and never answers must not
// hold the wait past its deadline.
// waitForConsole() also bounds each probe on a timer of its own, not only on fetch's AbortSignal:
// `npm start` holds the checkout's start-up lock until this wait ends, and once in CI it held it
// for minutes after its console answered; the only await in that window was a probe. Whether
// fetch can outlive its signal was not shown (node#56917 is an open report of a body read that an
// abort leaves pending for ever), but with the wait's own timer a probe that does counts as no
// answer, the next probe goes out, and the wait ends by its deadline either way.

type Answer = "ours" | "other" | "none";

/**
 * GET <consoleUrl>/api/health within timeoutMs: "ours" when it answers 2xx with this run's nonce,
 * "other" when something answers 2xx without it (another server on the port, or a console built
 * before the nonce existed), "none" otherwise.
 */
export async function consoleAnswers(consoleUrl: string, startNonce: string, timeoutMs = 2_000): Promise<Answer> {
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

export interface WaitOptions {
  /** The whole wait's limit (measured on the monotonic clock). */
  withinMs: number;
  /** Between probes. */
  everyMs?: number;
  /** Each probe's timeout (a probe still pending a second after it counts as no answer). */
  probeTimeoutMs?: number;
  /** Checked before each probe: true ends the wait with "stopped". */
  stopped?: () => boolean;
  /** For tests: the probe (default consoleAnswers). */
  probe?: (consoleUrl: string, startNonce: string, timeoutMs: number) => Promise<Answer>;
}

/**
 * Probes until this run's console answers ("ours"), the wait is stopped, or `withinMs` has passed
 * ("other" if something else answered meanwhile, else "none"). Never waits on one probe longer
 * than its timeout plus a second, nor past the deadline.
 */
export async function waitForConsole(
  consoleUrl: string,
  startNonce: string,
  options: WaitOptions,
): Promise<{ answer: Answer | "stopped"; otherAnswered: boolean }> {
  const { withinMs, everyMs = 300, probeTimeoutMs = 2_000, stopped = () => false, probe = consoleAnswers } = options;
  const deadline = performance.now() + withinMs;
  let otherAnswered = false;
  for (;;) {
    if (stopped()) return { answer: "stopped", otherAnswered };
    const left = deadline - performance.now();
    if (left <= 0) return { answer: otherAnswered ? "other" : "none", otherAnswered };
    const answer = await settledWithin(probe(consoleUrl, startNonce, probeTimeoutMs), Math.min(probeTimeoutMs + 1_000, left), "none" as const);
    if (answer === "ours") return { answer, otherAnswered };
    otherAnswered ||= answer === "other";
    if (stopped()) return { answer: "stopped", otherAnswered };
    await new Promise((resolve) => setTimeout(resolve, Math.min(everyMs, Math.max(0, deadline - performance.now()))));
  }
}

/** `promise`'s value, or `fallback` once `ms` have passed without it (or if it rejects). */
async function settledWithin<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([promise.catch(() => fallback), late]);
  } finally {
    clearTimeout(timer);
  }
}
