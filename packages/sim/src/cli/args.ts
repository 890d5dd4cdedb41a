// Argument parsing and validation for the meridian-sim CLI. Every problem becomes a UsageError,
// which main.ts prints as one clear line and turns into exit code 2 (the console relies on that).

import { existsSync, statSync } from "node:fs";
import { MAX_COST_WEIGHT } from "@meridian/routing";

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export type RawArgs = { command: string | undefined; flags: Map<string, string | true>; positionals: string[] };

/** Flags that never take a value. Everything else is `--name value` or `--name=value`. */
const BOOLEAN_FLAGS = new Set(["json", "help", "quiet", "spread-ticks"]);

export function parseArgv(argv: readonly string[]): RawArgs {
  const flags = new Map<string, string | true>();
  const positionals: string[] = [];
  let command: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h") {
      flags.set("help", true);
      continue;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
      if (name.length === 0) throw new UsageError(`malformed flag ${arg}`);
      if (BOOLEAN_FLAGS.has(name)) {
        if (eq >= 0) throw new UsageError(`--${name} takes no value`);
        flags.set(name, true);
        continue;
      }
      let value: string | undefined;
      if (eq >= 0) value = arg.slice(eq + 1);
      else {
        value = argv[i + 1];
        if (value === undefined || (value.startsWith("--") && value.length > 2)) {
          throw new UsageError(`--${name} needs a value`);
        }
        i++;
      }
      if (flags.has(name)) throw new UsageError(`--${name} given twice`);
      flags.set(name, value);
      continue;
    }
    if (command === undefined) command = arg;
    else positionals.push(arg);
  }
  return { command, flags, positionals };
}

/** Reads typed flags and remembers which were consumed, so unknown flags can be reported. */
export class FlagReader {
  private readonly used = new Set<string>();
  constructor(private readonly flags: Map<string, string | true>) {}

  has(name: string): boolean {
    this.used.add(name);
    return this.flags.has(name);
  }

  bool(name: string): boolean {
    this.used.add(name);
    return this.flags.get(name) === true;
  }

  string(name: string): string | undefined {
    this.used.add(name);
    const v = this.flags.get(name);
    if (v === true) throw new UsageError(`--${name} needs a value`);
    return v;
  }

  number(name: string, opts: { min?: number; max?: number; exclusiveMin?: number; integer?: boolean } = {}): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(value)) throw new UsageError(`--${name}: "${raw}" is not a number`);
    if (opts.integer && !Number.isInteger(value)) throw new UsageError(`--${name}: "${raw}" is not an integer`);
    if (opts.min !== undefined && value < opts.min) throw new UsageError(`--${name}: must be ≥ ${opts.min}, got ${raw}`);
    if (opts.max !== undefined && value > opts.max) throw new UsageError(`--${name}: must be ≤ ${opts.max}, got ${raw}`);
    if (opts.exclusiveMin !== undefined && value <= opts.exclusiveMin) {
      throw new UsageError(`--${name}: must be > ${opts.exclusiveMin}, got ${raw}`);
    }
    return value;
  }

  onOff(name: string, fallback: boolean): boolean {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (raw === "on" || raw === "true") return true;
    if (raw === "off" || raw === "false") return false;
    throw new UsageError(`--${name}: expected on or off, got "${raw}"`);
  }

  /** Throws on any flag that no reader asked for (typos must not be silently ignored). */
  rejectUnknown(): void {
    for (const name of this.flags.keys()) {
      if (!this.used.has(name)) throw new UsageError(`unknown flag --${name}`);
    }
  }
}

/** `rtt=0.5,queue=0.1` (either key may be omitted). Both weights must be positive numbers. */
export function parseWeights(raw: string, fallback: { rtt: number; queue: number }): { rtt: number; queue: number } {
  const weights = { ...fallback };
  const seen = new Set<string>();
  for (const part of raw.split(",")) {
    const [key, value, extra] = part.split("=").map((s) => s.trim());
    if (key === undefined || value === undefined || extra !== undefined || key === "" || value === "") {
      throw new UsageError(`--weights: expected rtt=NUMBER,queue=NUMBER, got "${raw}"`);
    }
    if (key !== "rtt" && key !== "queue") throw new UsageError(`--weights: unknown weight "${key}" (expected rtt or queue)`);
    if (seen.has(key)) throw new UsageError(`--weights: ${key} given twice`);
    seen.add(key);
    const n = Number(value);
    // 0 stays allowed: it reproduces GORGO's reward hack (W_queue = 0, packages/sim/README.md), which
    // no LB would accept. Above the LBs' limit, no LB would run it either, and a score may overflow.
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`--weights: ${key} must be a number ≥ 0, got "${value}"`);
    if (n > MAX_COST_WEIGHT) throw new UsageError(`--weights: ${key} must be at most ${MAX_COST_WEIGHT} (the LBs' limit), got "${value}"`);
    weights[key] = n;
  }
  return weights;
}

/** `lo,hi` with 0 ≤ lo ≤ hi ≤ the LBs' weight limit (a weight no LB would run is no answer). */
export function parseBounds(name: string, raw: string): [number, number] {
  const parts = raw.split(",").map((s) => (s.trim() === "" ? Number.NaN : Number(s.trim())));
  const [lo, hi] = parts;
  if (parts.length !== 2 || lo === undefined || hi === undefined || !Number.isFinite(lo) || !Number.isFinite(hi) || lo < 0 || lo > hi) {
    throw new UsageError(`--${name}: expected LO,HI with 0 ≤ LO ≤ HI, got "${raw}"`);
  }
  if (hi > MAX_COST_WEIGHT) throw new UsageError(`--${name}: HI must be at most ${MAX_COST_WEIGHT} (the LBs' weight limit), got "${raw}"`);
  return [lo, hi];
}

export function parseNumberList(name: string, raw: string, opts: { exclusiveMin?: number } = {}): number[] {
  const values = raw.split(",").map((s) => s.trim());
  if (values.length === 0 || values.some((v) => v === "")) throw new UsageError(`--${name}: expected a comma-separated list, got "${raw}"`);
  return values.map((v) => {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new UsageError(`--${name}: "${v}" is not a number`);
    if (opts.exclusiveMin !== undefined && n <= opts.exclusiveMin) throw new UsageError(`--${name}: ${v} must be > ${opts.exclusiveMin}`);
    return n;
  });
}

export interface WindowArgs {
  fromMs: number | undefined;
  toMs: number | undefined;
}

export function readWindow(flags: FlagReader): WindowArgs {
  const fromMs = flags.number("from-ms", { min: 0 });
  const toMs = flags.number("to-ms", { min: 0 });
  if (fromMs !== undefined && toMs !== undefined && fromMs >= toMs) {
    throw new UsageError(`bad window: --from-ms (${fromMs}) must be less than --to-ms (${toMs})`);
  }
  return { fromMs, toMs };
}

/** Resolves --trace: `bundled` means the workload package's fixture; anything else must be a readable file. */
export function checkTraceFile(path: string): void {
  if (!existsSync(path)) throw new UsageError(`trace file not found: ${path}`);
  if (!statSync(path).isFile()) throw new UsageError(`trace path is not a file: ${path}`);
}

/** `us-ashburn=3,eu-frankfurt=1`: weights ≥ 0 per region of the fleet, at least one positive. */
export function parseRegionWeights(name: string, raw: string, regions: readonly string[]): Record<string, number> {
  const weights: Record<string, number> = {};
  for (const part of raw.split(",")) {
    const [region, value, extra] = part.split("=").map((s) => s.trim());
    if (!region || value === undefined || value === "" || extra !== undefined) throw new UsageError(`--${name}: expected REGION=WEIGHT,..., got "${raw}"`);
    if (!regions.includes(region)) throw new UsageError(`--${name}: unknown region "${region}" (expected one of ${regions.join(", ")})`);
    if (region in weights) throw new UsageError(`--${name}: ${region} given twice`);
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name}: ${region} must be a number ≥ 0, got "${value}"`);
    weights[region] = n;
  }
  if (!Object.values(weights).some((w) => w > 0)) throw new UsageError(`--${name}: at least one region needs a positive weight`);
  return weights;
}
