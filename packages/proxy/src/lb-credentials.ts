// The LB's own credentials: the key material of each LB token it accepts (docs/ARCHITECTURE.md, "LB
// credentials"). It keeps what a token lets it do, not the token: the proof key (to answer the
// console's challenge), SHA-256 of the token (to verify the console's admin bearer) and the
// read-only peer credential (to poll its peers). Tokens arrive from MERIDIAN_LB_TOKEN(_FILE) at
// startup, or from the console over POST /admin/credentials during a rotation; the console retires
// old ones the same way. The set is persisted (mode 0600) so a restarted LB keeps a rotated token
// without the console, and a retired token given again through the environment stays retired.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { deriveLbKey, digestsEqual, proofMac, type LbKeyMaterial } from "@meridian/protocol/credentials";
import { writeFileDurably } from "./durable-file";

/** Tokens held at once: a rotation needs two; the rest is slack for an operator's reset. */
const MAX_HELD_KEYS = 8;
/** Retired key ids remembered, so an old token in the environment is not taken back. */
const MAX_RETIRED_REMEMBERED = 64;

const FILE_SCHEMA = "meridian.lb-credentials-file/1";

const FileSchema = z.strictObject({
  schema: z.literal(FILE_SCHEMA),
  keys: z.array(
    z.strictObject({
      keyId: z.string(),
      proofKey: z.string(),
      adminVerifier: z.string(),
      peerCredential: z.string(),
      addedAt: z.number(),
    }),
  ),
  retired: z.array(z.string()),
});

/** The comparison used on digests; a parameter so tests can observe that every candidate is compared. */
export type DigestCompare = (a: Buffer, b: Buffer) => boolean;

interface HeldKey extends LbKeyMaterial {
  addedAt: number;
}

export type InstallResult = "installed" | "already-held" | "retired" | "full";
/** What update() did, or why it changed nothing. */
export type UpdateResult = { ok: true; installed: boolean; retired: number } | { ok: false; refused: "token_retired" | "too_many_tokens" | "last_token" };

/** The credentials file could not be written; the held set is as it was before the call. */
export class CredentialsNotSaved extends Error {
  constructor(cause: unknown) {
    super(`the credentials file could not be written (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = "CredentialsNotSaved";
  }
}

export class LbCredentials {
  /** Newest first. */
  private held: HeldKey[] = [];
  private retired: string[] = [];

  private constructor(private readonly file: string | null) {}

  /**
   * The persisted set (when `file` is given and exists), plus the bootstrap token unless it is held
   * or was retired. Returns what happened to the bootstrap token, for the startup log.
   */
  static load(options: { file: string | null; bootstrapToken: string | null; now: number }): {
    credentials: LbCredentials;
    bootstrap: "none" | "added" | "held" | "retired" | "full";
  } {
    const credentials = new LbCredentials(options.file);
    credentials.readFile();
    if (!options.bootstrapToken) return { credentials, bootstrap: "none" };
    const outcome = credentials.install(options.bootstrapToken, options.now);
    return { credentials, bootstrap: outcome === "installed" ? "added" : outcome === "already-held" ? "held" : outcome };
  }

  keyIds(): string[] {
    return this.held.map((key) => key.keyId);
  }

  get empty(): boolean {
    return this.held.length === 0;
  }

  /** True when `bearerDigest` (SHA-256 of the presented bearer) is one of the held tokens. Compares
   * against every held key, with no early exit. */
  isAdmin(bearerDigest: Buffer, compare: DigestCompare = digestsEqual): boolean {
    let match = false;
    for (const key of this.held) match = compare(bearerDigest, key.adminVerifier) || match;
    return match;
  }

  /** The answer to a challenge: one MAC per held key, newest first. */
  prove(lbId: string, nonce: string): { keyId: string; mac: string }[] {
    return this.held.map((key) => ({ keyId: key.keyId, mac: proofMac(key.proofKey, lbId, nonce) }));
  }

  /** Peer credentials to present to peers, newest first. */
  peerCredentials(): string[] {
    return this.held.map((key) => key.peerCredential);
  }

  /**
   * Accepts a new token beside the held ones. Throws on a malformed token, and CredentialsNotSaved
   * when the file cannot be written. The file is written before the token is held: a token held but
   * unsaved would be answered "already-held" on the console's retry and lost at the next restart.
   */
  install(token: string, now: number): InstallResult {
    const material = deriveLbKey(token);
    if (this.held.some((key) => key.keyId === material.keyId)) return "already-held";
    if (this.retired.includes(material.keyId)) return "retired";
    if (this.held.length >= MAX_HELD_KEYS) return "full";
    const held = [{ ...material, addedAt: now }, ...this.held];
    this.writeFile(held, this.retired);
    this.held = held;
    return "installed";
  }

  /**
   * One POST /admin/credentials: installs `install` (if any) and retires `retire`, as one change with
   * one file write, or changes nothing. The result is judged whole first: a request whose retire
   * list would leave no token is refused before its install is held (the refused install used to
   * stay held, and saved), and a full set takes a new token when the same request retires one.
   * Throws on a malformed token and CredentialsNotSaved (nothing changed) when the file cannot be
   * written.
   */
  update(install: string | undefined, retire: readonly string[], now: number): UpdateResult {
    const material = install === undefined ? null : deriveLbKey(install);
    if (material && this.retired.includes(material.keyId)) return { ok: false, refused: "token_retired" };
    let held = this.held.filter((key) => !retire.includes(key.keyId));
    const installing = material !== null && !retire.includes(material.keyId) && !held.some((key) => key.keyId === material.keyId);
    if (installing && held.length >= MAX_HELD_KEYS) return { ok: false, refused: "too_many_tokens" };
    if (installing) held = [{ ...material, addedAt: now }, ...held];
    if (held.length === 0) return { ok: false, refused: "last_token" };
    const retiredNow = this.held.length - held.length + (installing ? 1 : 0);
    const retired = [...this.retired, ...retire.filter((keyId, i) => !this.retired.includes(keyId) && retire.indexOf(keyId) === i)].slice(
      -MAX_RETIRED_REMEMBERED,
    );
    if (installing || retiredNow > 0 || retired.length !== this.retired.length) this.writeFile(held, retired);
    this.held = held;
    this.retired = retired;
    return { ok: true, installed: installing, retired: retiredNow };
  }

  private readFile(): void {
    if (!this.file) return;
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return;
      throw cause;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      // A file cut short (a disk that filled, an editor) must say which file, and the way out.
      throw new Error(
        `credentials file ${this.file}: not valid JSON (${cause instanceof Error ? cause.message : String(cause)}); restore it, or delete it and start the LB with its current token in MERIDIAN_LB_TOKEN`,
      );
    }
    const parsed = FileSchema.safeParse(json);
    if (!parsed.success) throw new Error(`credentials file ${this.file}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    this.held = parsed.data.keys.map((key) => ({
      keyId: key.keyId,
      proofKey: Buffer.from(key.proofKey, "base64url"),
      adminVerifier: Buffer.from(key.adminVerifier, "hex"),
      peerCredential: key.peerCredential,
      addedAt: key.addedAt,
    }));
    this.retired = parsed.data.retired;
  }

  private writeFile(held: readonly HeldKey[], retired: readonly string[]): void {
    if (!this.file) return;
    const document = {
      schema: FILE_SCHEMA,
      keys: held.map((key) => ({
        keyId: key.keyId,
        proofKey: key.proofKey.toString("base64url"),
        adminVerifier: key.adminVerifier.toString("hex"),
        peerCredential: key.peerCredential,
        addedAt: key.addedAt,
      })),
      retired,
    };
    try {
      writeFileDurably(this.file, `${JSON.stringify(document, null, 2)}\n`, 0o600);
    } catch (cause) {
      throw new CredentialsNotSaved(cause);
    }
  }
}
