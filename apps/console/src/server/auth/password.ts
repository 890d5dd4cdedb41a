// Password hashing with scrypt (node:crypto). Stored as `scrypt$N$r$p$salt$hash`, base64 fields,
// so the parameters can be raised later without breaking existing hashes.
//
// The async scrypt runs on libuv's thread pool: scryptSync took ~40 ms of the event loop per check,
// so a burst of anonymous logins stalled every timer of the console (lease renewal, LB probes).
import "server-only";
import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from "node:crypto";

const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 64;

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, KEY_LENGTH, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64"), hash.toString("base64")].join("$");
}

/** Whether `stored` has the shape of a hash this module wrote (a disabled user's marker has not). */
export function isPasswordHash(stored: string): boolean {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  return scheme === "scrypt" && !!n && !!r && !!p && !!salt && !!hash;
}

/** Constant-time comparison; false for any malformed stored hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (!isPasswordHash(stored)) return false;
  const [, n, r, p, salt, hash] = stored.split("$") as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, "base64");
  // A key this short was never written here (64 bytes); an empty one would match any password.
  if (expected.length < 16) return false;
  try {
    const actual = await scryptAsync(password, Buffer.from(salt, "base64"), expected.length, {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: 256 * Number(n) * Number(r) + 1024 * 1024,
    });
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  } catch {
    // Parameters that scrypt rejects (a hand-edited row): the same as a wrong password.
    return false;
  }
}
