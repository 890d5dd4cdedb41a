// The bench scripts' command-line flags: `--name value`, and numeric flags checked as they are read,
// so a typo (`--seed abc`, `--seeds 0`) stops the script with one line on stderr instead of running
// on NaN, 0 or an empty list.

import { basename } from "node:path";

/** The value of `--name value` or `--name=value`, or undefined when the flag is absent. (Only the
 * first form was read: `--time-scale=2` ran at the default and printed time_scale 1.) */
export function flag(name: string, argv: readonly string[] = process.argv): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  const joined = argv.find((arg) => arg.startsWith(`--${name}=`));
  return joined === undefined ? undefined : joined.slice(name.length + 3);
}

/** Whether `--name` is given, in either form. */
export function hasFlag(name: string, argv: readonly string[] = process.argv): boolean {
  return argv.includes(`--${name}`) || argv.some((arg) => arg.startsWith(`--${name}=`));
}

export interface NumberRule {
  integer?: boolean;
  min?: number;
  max?: number;
  exclusiveMin?: number;
}

/** Seeds are 32-bit (the simulator mixes them as such): distinct seeds must be distinct values. */
export const SEED_RULE: NumberRule = { integer: true, min: 0, max: 2 ** 32 - 1 };

function expected(rule: NumberRule): string {
  const kind = rule.integer ? "an integer" : "a number";
  if (rule.min !== undefined && rule.max !== undefined) return `${kind} from ${rule.min} to ${rule.max}`;
  if (rule.min !== undefined) return `${kind} ≥ ${rule.min}`;
  if (rule.exclusiveMin !== undefined) return `${kind} > ${rule.exclusiveMin}`;
  if (rule.max !== undefined) return `${kind} ≤ ${rule.max}`;
  return kind;
}

/** `raw` as a number that keeps `rule`, or an Error whose message names the flag and what it expects. */
export function parseNumberFlag(name: string, raw: string | undefined, rule: NumberRule = {}): number {
  const value = raw === undefined || raw.trim() === "" || raw.startsWith("--") ? Number.NaN : Number(raw);
  const ok =
    Number.isFinite(value) &&
    (!rule.integer || Number.isInteger(value)) &&
    (rule.min === undefined || value >= rule.min) &&
    (rule.max === undefined || value <= rule.max) &&
    (rule.exclusiveMin === undefined || value > rule.exclusiveMin);
  if (!ok) throw new Error(`--${name}: expected ${expected(rule)}, got ${raw === undefined ? "no value" : JSON.stringify(raw)}`);
  return value;
}

/** `--name N`, or `fallback` when the flag is absent; a bad value exits 2 with one line on stderr. */
export function numberFlag(name: string, fallback: number, rule: NumberRule = {}): number {
  if (!hasFlag(name)) return fallback;
  try {
    return parseNumberFlag(name, flag(name), rule);
  } catch (error) {
    process.stderr.write(`${basename(process.argv[1] ?? "bench")}: error: ${(error as Error).message}\n`);
    process.exit(2);
  }
}
