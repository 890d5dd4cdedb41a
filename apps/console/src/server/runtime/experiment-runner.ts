// Offline experiments: spawns `meridian-sim compare --json` for a trace window and a set of
// policies, follows its stderr for progress, and stores the parsed result in `experiments`.
// The child's stdout is one JSON object ({"policies": [...]}); a non-zero exit is a failure whose
// message is the child's last stderr line (the CLI prints usage errors as one clear line).
// Several consoles may share the database, each running its own simulations: a row names the console
// that runs it (runner) and stays vouched for until runner_expires_at, which that console renews
// while the child runs. Rows still "running" whose runner stopped vouching (its console crashed or was
// killed) are marked interrupted by whichever console sweeps first; a live console's runs are left
// alone. The expiry is written and judged on the database's clock (databaseNowMs), not the consoles':
// a console whose clock runs ahead does not mark a live console's runs interrupted. A run that ended
// while the database refused writes (locked by another process, unreachable) keeps its outcome in
// memory, written again with backoff and vouched for meanwhile, until the database takes it.
import "server-only";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { and, desc, eq, isNull, lt, notInArray, or, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { databaseNowMs, type Store } from "@meridian/db";
import { busy, notFound } from "../errors";

/** Simulations are CPU-bound; more at once would starve the console and the live fleet. */
const MAX_CONCURRENT = 2;
/** How long a runner's word lasts, and how often it is renewed (and other consoles' leftovers swept). */
const RUNNER_TTL_MS = 30_000;
const RUNNER_RENEW_MS = 10_000;
/** A finished run's outcome the database refused is written again after this, doubling up to the max. */
const OUTCOME_RETRY_FIRST_MS = 250;
const OUTCOME_RETRY_MAX_MS = 5_000;
/** Attempts before a result write is given up (some 90 s): an error that does not clear (a value the
 * database refuses) would otherwise be retried, and logged, for as long as the console runs. The row
 * is then swept as interrupted, as a run whose console died. */
const OUTCOME_MAX_ATTEMPTS = 20;

export interface TraceInfo {
  id: string;
  label: string;
  path: string;
}

export interface ExperimentParams {
  /** "compare" (default): policies side by side. "grid": the (W_rtt, W_queue) landscape of gorgo. */
  kind?: "compare" | "grid" | undefined;
  traceId: string;
  fromMs?: number | undefined;
  toMs?: number | undefined;
  timeScale: number;
  policies: string[];
  /** Grid runs: the fleet preset, every prompt this many times as long, points per axis. */
  grid?: { preset: "paper" | "global"; promptFactor: number; points: number } | undefined;
}

/** The meridian-sim arguments of a run (without --json). */
export function simArgs(params: ExperimentParams, tracePath: string): string[] {
  const window = [
    ...(params.fromMs !== undefined ? ["--from-ms", String(params.fromMs)] : []),
    ...(params.toMs !== undefined ? ["--to-ms", String(params.toMs)] : []),
  ];
  if (params.kind === "grid") {
    const grid = params.grid ?? { preset: "paper", promptFactor: 1, points: 7 };
    return [
      "grid",
      "--trace",
      tracePath,
      "--time-scale",
      String(params.timeScale),
      "--preset",
      grid.preset,
      "--prompt-factor",
      String(grid.promptFactor),
      "--points",
      String(grid.points),
      ...window,
    ];
  }
  return ["compare", "--trace", tracePath, "--policies", params.policies.join(","), "--time-scale", String(params.timeScale), ...window];
}

/** The command that runs the simulator; tests substitute a fake. */
export type SimCommand = (args: string[]) => { command: string; args: string[]; cwd: string };

export function defaultSimCommand(repoRoot: string): SimCommand {
  const bin = join(repoRoot, "packages", "sim", "bin", "meridian-sim.mjs");
  return (args) => ({ command: process.execPath, args: [bin, ...args], cwd: repoRoot });
}

/** Progress in [0, 1] from one stderr line of meridian-sim: "progress DONE/TOTAL LABEL" (DONE
 * counts over all policies of the run). Also reads "42%" and "progress 0.42"; null otherwise. */
export function parseProgress(line: string): number | null {
  const ratio = /\bprogress\s+([0-9]+)\s*\/\s*([0-9]+)/i.exec(line) ?? /\b([0-9]+)\s*\/\s*([0-9]+)\b/.exec(line);
  if (ratio && Number(ratio[2]) > 0) return Math.min(1, Number(ratio[1]) / Number(ratio[2]));
  const percent = /([0-9]+(?:\.[0-9]+)?)\s*%/.exec(line);
  if (percent) return Math.min(1, Number(percent[1]) / 100);
  const fraction = /\bprogress\s+(0?\.[0-9]+|1(?:\.0+)?|0)\b/i.exec(line);
  if (fraction) return Number(fraction[1]);
  return null;
}

/** What the runner uses, and nothing else. */
export interface ExperimentRunnerDeps {
  store: Store;
  log: Logger;
  /** This console's id (its leadership id), recorded as the runner of the experiments it starts. */
  runnerId: string;
  now?: () => number;
  /** The bundled trace is found under it. */
  repoRoot: string;
  simCommand: SimCommand;
  /** Extra folders whose *.jsonl traces are offered. */
  traceDirs: string[];
  /** How many times a refused result write is made before it is given up (tests lower it). */
  outcomeAttempts?: number;
}

interface Running {
  child: ChildProcess;
  /** Policies done so far / policies, refined by per-policy progress lines. */
  progress: number;
}

/** How a run ended, as its row records it. */
interface Outcome {
  state: "done" | "failed";
  progress: number | undefined;
  resultJson: string | null;
  error: string | null;
  finishedAt: number;
}

export class ExperimentRunner {
  private readonly running = new Map<string, Running>();
  /** Runs that ended and whose outcome the database has not taken yet (it refused the write): kept
   * here, written again with backoff until it does, and vouched for meanwhile as running ones are. */
  private readonly finished = new Map<string, Outcome>();
  private readonly outcomeRetries = new Map<string, NodeJS.Timeout>();
  private sweeper: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(private readonly deps: ExperimentRunnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Renews this console's runs and sweeps other consoles' leftovers every RUNNER_RENEW_MS. */
  startSweeping(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      this.sweep().catch((error: unknown) => {
        if (this.sweeper) this.deps.log.error({ err: error }, "experiment sweep failed");
      });
    }, RUNNER_RENEW_MS);
    this.sweeper.unref();
  }

  /** Kills this console's simulations and marks their rows interrupted (nobody will finish them).
   * Outcomes still waiting for the database get one last write; one it refuses is lost (logged). */
  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    const ids = [...this.running.keys()];
    for (const { child } of this.running.values()) child.kill("SIGTERM");
    this.running.clear();
    for (const timer of this.outcomeRetries.values()) clearTimeout(timer);
    this.outcomeRetries.clear();
    const unrecorded = [...this.finished];
    this.finished.clear();
    for (const [id, outcome] of unrecorded) {
      await this.writeOutcome(id, outcome).catch((error: unknown) =>
        this.deps.log.error({ experimentId: id, err: error }, "experiment outcome lost: the console stopped before the database took it"),
      );
    }
    if (ids.length === 0) return;
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    await db
      .update(experiments)
      .set({ state: "failed", error: "interrupted: its console stopped", finishedAt: this.now(), runnerExpiresAt: null })
      .where(and(eq(experiments.state, "running"), eq(experiments.runner, this.deps.runnerId)));
  }

  private async sweep(): Promise<void> {
    // A finished run whose outcome is not written yet is vouched for too: it is not interrupted.
    if (this.running.size > 0 || this.finished.size > 0) {
      const { db, tables } = this.deps.store;
      const { experiments } = tables;
      await db
        .update(experiments)
        .set({ runnerExpiresAt: this.leaseEnd() })
        .where(and(eq(experiments.state, "running"), eq(experiments.runner, this.deps.runnerId)));
    }
    await this.recoverInterrupted();
  }

  /** When a run this console renews now stops being vouched for: RUNNER_TTL_MS on the database's clock. */
  private leaseEnd() {
    return sql`${databaseNowMs(this.deps.store.dialect)} + ${RUNNER_TTL_MS}`;
  }

  traces(): TraceInfo[] {
    const out: TraceInfo[] = [];
    const bundled = resolve(this.deps.repoRoot, "packages", "workload", "fixtures", "mooncake-conversation-first500.jsonl");
    if (existsSync(bundled)) out.push({ id: "bundled", label: "Mooncake conversation, first 500 requests (bundled)", path: bundled });
    for (const dir of this.deps.traceDirs) {
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir).sort()) {
        if (!name.endsWith(".jsonl")) continue;
        out.push({ id: `shared:${name}`, label: basename(name, ".jsonl"), path: join(dir, name) });
      }
    }
    return out;
  }

  async start(params: ExperimentParams, createdBy: string): Promise<string> {
    const trace = this.traces().find((t) => t.id === params.traceId);
    if (!trace) throw notFound("trace", params.traceId);
    if (this.running.size >= MAX_CONCURRENT) {
      throw busy(`${this.running.size} experiments are already running; wait for one to finish`);
    }
    const id = `exp-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    const now = this.now();
    await db.insert(experiments).values({
      id,
      traceId: params.traceId,
      paramsJson: JSON.stringify(params),
      state: "running",
      progress: 0,
      createdBy,
      createdAt: now,
      runner: this.deps.runnerId,
      runnerExpiresAt: this.leaseEnd(),
    });
    // Checked again after the insert: two starts at once both passed the check above.
    if (this.running.size >= MAX_CONCURRENT) {
      await db.delete(experiments).where(eq(experiments.id, id));
      throw busy(`${this.running.size} experiments are already running; wait for one to finish`);
    }
    const args = [...simArgs(params, trace.path), "--json"];
    const spec = this.deps.simCommand(args);
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const entry: Running = { child, progress: 0 };
    this.running.set(id, entry);
    let stdout = "";
    let stderrTail = "";
    let lastLine = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-8_192);
      const lines = stderrTail.split("\n");
      for (const line of lines.slice(0, -1)) {
        if (line.trim()) lastLine = line.trim();
        const progress = parseProgress(line);
        if (progress !== null && progress > entry.progress) {
          entry.progress = progress;
          // Progress is informative: a failed write is logged, and the next line tries again.
          db.update(experiments)
            .set({ progress })
            .where(eq(experiments.id, id))
            .catch((error: unknown) => this.deps.log.warn({ experimentId: id, err: error }, "experiment progress not recorded"));
        }
      }
      stderrTail = lines.at(-1) ?? "";
    });
    child.on("error", (error) => this.finish(id, { error: `could not start the simulator: ${error.message}` }));
    child.on("close", (code, signal) => {
      if (stderrTail.trim()) lastLine = stderrTail.trim();
      if (code !== 0) {
        this.finish(id, { error: lastLine || `simulator exited with ${signal ?? `code ${code}`}` });
        return;
      }
      try {
        const result = JSON.parse(stdout) as unknown;
        this.finish(id, { result });
      } catch {
        this.finish(id, { error: "the simulator's output was not JSON" });
      }
    });
    return id;
  }

  /** Records how the child ended (called from its events: failures are logged, not thrown). The
   * outcome stays in memory until the database took it: a refused write is made again with backoff. */
  private finish(id: string, outcome: { result?: unknown; error?: string }): void {
    if (!this.running.has(id)) return;
    this.finished.set(id, {
      state: outcome.error ? "failed" : "done",
      progress: outcome.error ? undefined : 1,
      resultJson: outcome.result === undefined ? null : JSON.stringify(outcome.result),
      error: outcome.error ?? null,
      finishedAt: this.now(),
    });
    this.running.delete(id);
    this.recordOutcome(id, 1);
  }

  private writeOutcome(id: string, outcome: Outcome): Promise<unknown> {
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    return db
      .update(experiments)
      .set({ ...outcome, runnerExpiresAt: null })
      .where(eq(experiments.id, id));
  }

  /** Writes the finished run's outcome; until that succeeds, again after a backoff (stop() ends it). */
  private recordOutcome(id: string, attempt: number): void {
    this.outcomeRetries.delete(id);
    const outcome = this.finished.get(id);
    if (!outcome) return;
    this.writeOutcome(id, outcome).then(
      () => {
        if (this.finished.get(id) === outcome) this.finished.delete(id);
      },
      (error: unknown) => {
        // Stopped meanwhile: stop() made the last attempt.
        if (this.finished.get(id) !== outcome) return;
        if (attempt >= (this.deps.outcomeAttempts ?? OUTCOME_MAX_ATTEMPTS)) {
          this.finished.delete(id);
          this.deps.log.error({ experimentId: id, err: error, attempt }, "experiment outcome not recorded; given up, the run will be swept as interrupted");
          return;
        }
        const retryInMs = Math.min(OUTCOME_RETRY_FIRST_MS * 2 ** (attempt - 1), OUTCOME_RETRY_MAX_MS);
        this.deps.log.error({ experimentId: id, err: error, attempt, retryInMs }, "experiment outcome not recorded; retrying");
        const timer = setTimeout(() => this.recordOutcome(id, attempt + 1), retryInMs);
        timer.unref();
        this.outcomeRetries.set(id, timer);
      },
    );
  }

  /** Rows left "running" whose runner no longer vouches for them (its console died, or a console
   * from before runners were recorded) can never finish: mark them failed. Runs of live consoles,
   * this one's included, are left alone. This process's own runs are told apart by id, not by
   * runner: a console restarted with the same id (a fixed MERIDIAN_CONSOLE_ID) sweeps the runs its
   * previous process left behind. */
  async recoverInterrupted(): Promise<void> {
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    const ours = [...this.running.keys(), ...this.finished.keys()];
    await db
      .update(experiments)
      .set({ state: "failed", error: "interrupted: its console stopped", finishedAt: this.now(), runnerExpiresAt: null })
      .where(
        and(
          eq(experiments.state, "running"),
          ours.length > 0 ? notInArray(experiments.id, ours) : undefined,
          or(isNull(experiments.runnerExpiresAt), lt(experiments.runnerExpiresAt, databaseNowMs(this.deps.store.dialect))),
        ),
      );
  }

  async list() {
    const { db, tables } = this.deps.store;
    return db.select().from(tables.experiments).orderBy(desc(tables.experiments.createdAt)).limit(100);
  }
}
