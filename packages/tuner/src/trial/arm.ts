// The arm split of a concurrent A/B trial: a salted hash of the session key decides, so every turn
// of a conversation is routed with the same weights (its cache and its latency stay in one arm), a
// new salt per trial re-shuffles which sessions test the candidate, and any process (proxy,
// simulator, console) computes the same arm for the same session without coordination.

import type { TrialArm } from "@meridian/routing/types";

export type Arm = TrialArm;

/** FNV-1a over the UTF-16 code units, then murmur3's fmix32 so nearby keys land far apart. Uniform in [0, 1). */
export function hashUnit(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

/** The arm a session belongs to in the trial with this salt: the candidate with probability `share`. */
export function armOf(sessionKey: string, salt: string, share: number): Arm {
  return hashUnit(`${salt}\u0000${sessionKey}`) < share ? "candidate" : "incumbent";
}
