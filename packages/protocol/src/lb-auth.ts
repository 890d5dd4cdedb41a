import { z } from "zod";
import { nonEmptyString } from "./common";
import { makeParsers, schemaTag } from "./errors";

// The LB credential exchange (docs/ARCHITECTURE.md, "LB credentials"):
// - GET /admin/proof?nonce=N (no credential): the LB answers an LbProof, one HMAC of the nonce per
//   LB token it holds. The console checks one against the token it holds for that LB before it
//   sends that token anywhere.
// - POST /admin/credentials (the console's admin token): installs a rotated token or retires old
//   ones; the LB answers LbCredentialsStatus.
// The cryptography is in ./credentials.ts (a server-only entry point, `@meridian/protocol/credentials`).

export const LB_PROOF_SCHEMA = "meridian.lb-proof/1";
export const LB_CREDENTIALS_UPDATE_SCHEMA = "meridian.lb-credentials-update/1";
export const LB_CREDENTIALS_STATUS_SCHEMA = "meridian.lb-credentials/1";

/** A public token fingerprint: 16 lowercase hex characters. */
export const LB_KEY_ID_PATTERN = /^[0-9a-f]{16}$/;
/** A challenge nonce: base64url, 128 to 768 bits. */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{22,128}$/;

const keyId = z.string().regex(LB_KEY_ID_PATTERN, { error: "expected 16 lowercase hex characters" });

// The proof and the status are LB-written: unknown keys are dropped (a newer LB's extra field must
// not make an older console take it for an impostor). The update is console-written and strict.
export const LbProofSchema = z.object({
  schema: schemaTag(LB_PROOF_SCHEMA),
  lbId: nonEmptyString,
  nonce: z.string().regex(NONCE_PATTERN),
  /** One entry per token the LB holds, newest first. */
  proofs: z
    .array(z.object({ keyId, mac: z.string().regex(/^[A-Za-z0-9_-]{43}$/) }))
    .max(8)
    .default(() => []),
});

export const LbCredentialsUpdateSchema = z.strictObject({
  schema: schemaTag(LB_CREDENTIALS_UPDATE_SCHEMA),
  /** A new LB token to accept beside the ones held (a rotation's first step). */
  install: z.string().min(1).optional(),
  /** Key ids to stop accepting (a rotation's last step, or tokens the console no longer knows). */
  retire: z
    .array(keyId)
    .max(8)
    .default(() => []),
});

export const LbCredentialsStatusSchema = z.object({
  schema: schemaTag(LB_CREDENTIALS_STATUS_SCHEMA),
  lbId: nonEmptyString,
  /** Key ids the LB accepts now, newest first. */
  keyIds: z.array(keyId),
});

export type LbProof = z.output<typeof LbProofSchema>;
export type LbCredentialsUpdate = z.output<typeof LbCredentialsUpdateSchema>;
export type LbCredentialsUpdateInput = z.input<typeof LbCredentialsUpdateSchema>;
export type LbCredentialsStatus = z.output<typeof LbCredentialsStatusSchema>;

const proofParsers = makeParsers(LbProofSchema, "lbProof");
export const safeParseLbProof = proofParsers.safeParse;
const updateParsers = makeParsers(LbCredentialsUpdateSchema, "lbCredentialsUpdate");
export const safeParseLbCredentialsUpdate = updateParsers.safeParse;
const statusParsers = makeParsers(LbCredentialsStatusSchema, "lbCredentials");
export const safeParseLbCredentialsStatus = statusParsers.safeParse;
