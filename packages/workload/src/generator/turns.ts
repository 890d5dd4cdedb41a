// Which earlier request a request waits for. A chat user sends turn n+1 only once the reply to turn n
// has ended, so a generator session's turn waits for its session's previous turn; trace rows
// (Mooncake, ART-Chat) carry no turn order and wait for nothing: they are sent open loop. The live
// replay (src/replay/run.ts) and the fleet simulator's workload builder both ask TurnChain, so the
// simulator holds exactly the turns the replay holds.
import type { TraceFormat } from "../trace/types";

/** What a request says about its conversation: the replay's items carry a turn number, the generator's trace rows (multiTurnTrace) their format. */
export interface TurnOf {
  sessionId?: string | undefined;
  /** Generator requests: the 1-based turn within the session. */
  turn?: number | undefined;
  format?: TraceFormat | undefined;
}

/** The generator session `request` is a turn of, or undefined for a trace row (no turn order). */
function turnSessionOf(request: TurnOf): string | undefined {
  return request.turn !== undefined || request.format === "multi-turn" ? request.sessionId : undefined;
}

/**
 * Each session's latest turn, fed in send order. `H` is whatever the caller waits on: the replay's
 * promise of a request's end, the simulator's request id.
 */
export class TurnChain<H> {
  private readonly latest = new Map<string, H>();

  /**
   * What `request` waits for: its session's previous turn (the handle `sent` was given), `null` when
   * that turn has already `ended` (a later turn all the same, held for 0 ms), or undefined when it
   * waits for nothing (a trace row, or a session's first turn).
   */
  previous(request: TurnOf): H | null | undefined {
    const session = turnSessionOf(request);
    if (session === undefined) return undefined;
    const handle = this.latest.get(session);
    if (handle !== undefined) return handle;
    // Without a turn number (trace rows of the generator) the chain knows a session only from its
    // turns sent, and forgets none of them unless told: an unknown session is a first turn.
    return (request.turn ?? 1) > 1 ? null : undefined;
  }

  /** `request` was sent as `handle`: its session's next turn waits for it. Trace rows are not recorded. */
  sent(request: TurnOf, handle: H): void {
    const session = turnSessionOf(request);
    if (session !== undefined) this.latest.set(session, handle);
  }

  /**
   * `handle`'s reply has ended: a later turn of its session need not wait for it, so it is forgotten
   * (an endless generator's finished sessions would otherwise pile up), unless a later turn has
   * already taken its place.
   */
  ended(request: TurnOf, handle: H): void {
    const session = turnSessionOf(request);
    if (session !== undefined && this.latest.get(session) === handle) this.latest.delete(session);
  }
}
