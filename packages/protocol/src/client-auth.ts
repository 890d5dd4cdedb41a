import { z } from "zod";
import { nonEmptyString } from "./common";

// Client API keys as an LB receives them in its LbConfig: public ids and names for metrics, and the
// SHA-256 of each key. The secret itself never leaves the console's "shown once" answer
// (apps/console/README.md, "Security").

/** A key id: 12 lowercase hex characters, the public half of `mk_<id>_<secret>`. */
export const CLIENT_KEY_ID_PATTERN = /^[0-9a-f]{12}$/;
/** Hex SHA-256. */
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Keys one LB config may carry: its own region's and those of regions failed over to it. The bound
 * keeps the per-key metric series bounded too. */
export const MAX_CLIENT_KEYS_PER_CONFIG = 1_000;

export const ClientKeyEntrySchema = z.strictObject({
  id: z.string().regex(CLIENT_KEY_ID_PATTERN, { error: "expected 12 lowercase hex characters" }),
  /** Operator-chosen label, shown in metrics beside the id. */
  name: nonEmptyString.max(64),
  /** The region the key was issued for. */
  region: nonEmptyString,
  /** Hex SHA-256 of the whole key string. */
  sha256: z.string().regex(SHA256_HEX, { error: "expected a hex SHA-256 digest" }),
});

export const ClientAuthSchema = z
  .strictObject({
    /** When true, a request without a valid key (or a peer LB's credential on a forwarded request)
     * is refused with 401. When false, a valid key is still recognised and counted. */
    required: z.boolean().default(false),
    keys: z
      .array(ClientKeyEntrySchema)
      .max(MAX_CLIENT_KEYS_PER_CONFIG)
      .default(() => []),
  })
  .superRefine((auth, ctx) => {
    const seen = new Set<string>();
    auth.keys.forEach((key, at) => {
      if (seen.has(key.id)) ctx.addIssue({ code: "custom", path: ["keys", at, "id"], message: `duplicate key id "${key.id}"` });
      seen.add(key.id);
    });
  });

/** Hex SHA-256 digests of a peer LB's read-only peer credentials (current and, during a token
 * rotation, the next or the previous one). */
export const PeerCredentialHashesSchema = z.array(z.string().regex(SHA256_HEX, { error: "expected a hex SHA-256 digest" })).max(4);

export type ClientAuth = z.output<typeof ClientAuthSchema>;
export type ClientKeyEntry = z.output<typeof ClientKeyEntrySchema>;
