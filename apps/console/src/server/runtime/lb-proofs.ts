// What the console last learned from each LB's challenge (GET /admin/proof): whether the LB proved
// it holds the token the console would present, at which admin URL, and which key ids it holds. The
// LbAdminClient writes it (it sends no credential to an LB without a fresh entry here); the
// CredentialKeeper and the LBs page read it. Kept apart like LbHealthBook, so readers need no handle
// on the client.
import "server-only";

export interface LbProofState {
  /** The admin URL the challenge went to. */
  adminBase: string;
  /** Set when the LB proved the console's current token; null after a failed challenge. */
  provenKeyId: string | null;
  provenAt: number | null;
  /** Key ids the LB said it holds (from its last answer; empty when it did not answer). */
  held: string[];
  /** Something answered the challenge and did not prove this LB's token (as opposed to no answer). */
  refused: boolean;
  error: string | null;
  checkedAt: number;
}

export class LbProofBook {
  private readonly entries = new Map<string, LbProofState>();
  private readonly listeners: ((lbId: string) => void)[] = [];

  get(lbId: string): LbProofState | undefined {
    return this.entries.get(lbId);
  }

  record(lbId: string, state: LbProofState): void {
    this.entries.set(lbId, state);
    for (const listener of this.listeners) listener(lbId);
  }

  /** Drops the LB's proof, so the next credentialed call challenges it again (after a 401, a token
   * change or a URL change). */
  invalidate(lbId: string): void {
    const entry = this.entries.get(lbId);
    if (entry) this.entries.set(lbId, { ...entry, provenKeyId: null });
  }

  forget(lbId: string): void {
    this.entries.delete(lbId);
  }

  /** Called after every challenge (the CredentialKeeper persists new proofs and reconciles). */
  onRecord(listener: (lbId: string) => void): void {
    this.listeners.push(listener);
  }
}
