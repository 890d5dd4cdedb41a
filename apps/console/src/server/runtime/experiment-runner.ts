// Offline experiments: spawns `meridian-sim compare --json` for a trace window and a set of
// policies, follows its stderr for progress, and stores the parsed result in `experiments`.
// The child's stdout is one JSON object ({"policies": [...]}); a non-zero exit is a failure whose
// message is the CLI's error line, or the signal that killed it (experiment-sim.ts). The child dies
// with its console, even one killed outright. A run's row and its audit row are written in one
// transaction, and the child is spawned only once both are in and the console is not stopping.
// Several consoles may share the database, each running its own simulations: a row names the console
// that runs it (runner) and stays vouched for until runner_expires_at, which that console renews
// while the child runs: only the runs this process started, told apart by id, not by runner (a
// console restarted with the same fixed id does not vouch for its killed predecessor's runs). Rows
// still "running" whose runner stopped vouching (its console crashed or was killed) are marked
// interrupted by whichever console sweeps first; a live console's runs are left alone. The expiry is written and judged on the database's clock (databaseNowMs), not the consoles':
// a console whose clock runs ahead does not mark a live console's runs interrupted. A run that ended
// while the database refused writes (locked by another process, unreachable) keeps its outcome in
// memory, written again with backoff and vouched for meanwhile, until the database takes it.
import "server-only";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { and, desc, eq, inArray, isNull, lt, notInArray, or, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { databaseNowMs, type Queryable, type Store } from "@meridian/db";
import { busy, notFound } from "../errors";
import { SimStderr, spawnSim } from "./experiment-sim";

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
/** Every saved run is listed; of the unsaved ones, the newest this many. */
const RECENT_UNSAVED = 100;
const INTERRUPTED = "interrupted: its console stopped";

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
  /** Runs whose row is being written: they hold one of the MAX_CONCURRENT slots from the check on,
   * so two starts at once cannot both pass it while their transactions commit. */
  private readonly starting = new Set<string>();
  /** Runs that ended and whose outcome the database has not taken yet (it refused the write): kept
   * here, written again with backoff until it does, and vouched for meanwhile as running ones are. */
  private readonly finished = new Map<string, Outcome>();
  private readonly outcomeRetries = new Map<string, NodeJS.Timeout>();
  private sweeper: NodeJS.Timeout | null = null;
  /** Set first thing by stop(): a start() whose row was being written then spawns nothing. */
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly deps: ExperimentRunnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Renews this process's runs and sweeps other consoles' leftovers every RUNNER_RENEW_MS. */
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
    this.stopped = true;
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
      .set({ state: "failed", error: INTERRUPTED, finishedAt: this.now(), runnerExpiresAt: null })
      .where(and(eq(experiments.state, "running"), inArray(experiments.id, ids)));
  }

  /** The runs this process started and has not written the outcome of: the ones it vouches for. */
  private ownIds(): string[] {
    return [...this.starting, ...this.running.keys(), ...this.finished.keys()];
  }

  private async sweep(): Promise<void> {
    // A finished run whose outcome is not written yet is vouched for too: it is not interrupted.
    // Renewed by id, not by runner: a console restarted with the same id (a fixed
    // MERIDIAN_CONSOLE_ID) must not keep its killed predecessor's runs alive.
    const ours = this.ownIds();
    if (ours.length > 0) {
      const { db, tables } = this.deps.store;
      const { experiments } = tables;
      await db
        .update(experiments)
        .set({ runnerExpiresAt: this.leaseEnd() })
        .where(and(eq(experiments.state, "running"), inArray(experiments.id, ours)));
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

  /**
   * Starts a run: writes its row, and whatever `alsoWrite` writes (the audit row), in one
   * transaction, then spawns the simulator. A transaction that fails starts nothing; a console that
   * began stopping meanwhile marks the row interrupted and starts nothing (nobody would kill the
   * child or vouch for its row).
   */
  async start(params: ExperimentParams, createdBy: string, alsoWrite?: (tx: Queryable, id: string) => Promise<void>): Promise<string> {
    if (this.stopped) throw busy("the console is stopping; start the run again once it is back");
    const trace = this.traces().find((t) => t.id === params.traceId);
    if (!trace) throw notFound("trace", params.traceId);
    const taken = this.running.size + this.starting.size;
    if (taken >= MAX_CONCURRENT) throw busy(`${taken} experiments are already running; wait for one to finish`);
    const id = `exp-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
    // Held from the check above on (no await in between): the slot is this run's.
    this.starting.add(id);
    try {
      await this.deps.store.transaction(async (tx) => {
        await tx.db.insert(tx.tables.experiments).values({
          id,
          traceId: params.traceId,
          paramsJson: JSON.stringify(params),
          state: "running",
          progress: 0,
          createdBy,
          createdAt: this.now(),
          runner: this.deps.runnerId,
          runnerExpiresAt: this.leaseEnd(),
        });
        await alsoWrite?.(tx, id);
      });
    } finally {
      this.starting.delete(id);
    }
    if (this.stopped) {
      // stop() ran while the row was written, and did not see it. Its lease ends anyway if this
      // write is refused, and a sweep marks it then.
      const { db, tables } = this.deps.store;
      await db
        .update(tables.experiments)
        .set({ state: "failed", error: INTERRUPTED, finishedAt: this.now(), runnerExpiresAt: null })
        .where(eq(tables.experiments.id, id))
        .catch((error: unknown) => this.deps.log.warn({ experimentId: id, err: error }, "experiment not marked interrupted; its lease will lapse"));
      throw busy("the console is stopping; the run was not started");
    }
    this.launch(id, params, trace.path);
    return id;
  }

  /** Spawns the run's simulator and follows it to its end (finish()). */
  private launch(id: string, params: ExperimentParams, tracePath: string): void {
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    const spec = this.deps.simCommand([...simArgs(params, tracePath), "--json"]);
    let child: ChildProcess;
    try {
      child = spawnSim(spec);
    } catch (error) {
      this.record(id, this.failed(`could not start the simulator: ${error instanceof Error ? error.message : String(error)}`));
      return;
    }
    const entry: Running = { child, progress: 0 };
    this.running.set(id, entry);
    let stdout = "";
    const stderr = new SimStderr((progress) => {
      if (progress <= entry.progress) return;
      entry.progress = progress;
      // Progress is informative: a failed write is logged, and the next line tries again.
      db.update(experiments)
        .set({ progress })
        .where(eq(experiments.id, id))
        .catch((error: unknown) => this.deps.log.warn({ experimentId: id, err: error }, "experiment progress not recorded"));
    });
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => stderr.write(chunk));
    child.on("error", (error) => this.finish(id, { error: `could not start the simulator: ${error.message}` }));
    child.on("close", (code, signal) => {
      if (code !== 0) {
        this.finish(id, { error: stderr.failure(code, signal) });
        return;
      }
      try {
        const result = JSON.parse(stdout) as unknown;
        this.finish(id, { result });
      } catch {
        this.finish(id, { error: "the simulator's output was not JSON" });
      }
    });
  }

  /** Records how the child ended (called from its events: failures are logged, not thrown). The
   * outcome stays in memory until the database took it: a refused write is made again with backoff. */
  private finish(id: string, outcome: { result?: unknown; error?: string }): void {
    if (!this.running.has(id)) return;
    this.running.delete(id);
    this.record(
      id,
      outcome.error
        ? this.failed(outcome.error)
        : {
            state: "done",
            progress: 1,
            resultJson: outcome.result === undefined ? null : JSON.stringify(outcome.result),
            error: null,
            finishedAt: this.now(),
          },
    );
  }

  private failed(error: string): Outcome {
    return { state: "failed", progress: undefined, resultJson: null, error, finishedAt: this.now() };
  }

  /** Keeps the outcome until the database took it, and writes it. */
  private record(id: string, outcome: Outcome): void {
    this.finished.set(id, outcome);
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
    const ours = this.ownIds();
    await db
      .update(experiments)
      .set({ state: "failed", error: INTERRUPTED, finishedAt: this.now(), runnerExpiresAt: null })
      .where(
        and(
          eq(experiments.state, "running"),
          ours.length > 0 ? notInArray(experiments.id, ours) : undefined,
          or(isNull(experiments.runnerExpiresAt), lt(experiments.runnerExpiresAt, databaseNowMs(this.deps.store.dialect))),
        ),
      );
  }

  /** Every saved run (newest first: an operator keeps them as baselines, however many runs came
   * after), then the newest RECENT_UNSAVED unsaved ones. */
  async list() {
    const { db, tables } = this.deps.store;
    const { experiments } = tables;
    const saved = await db.select().from(experiments).where(eq(experiments.saved, true)).orderBy(desc(experiments.createdAt));
    const recent = await db.select().from(experiments).where(eq(experiments.saved, false)).orderBy(desc(experiments.createdAt)).limit(RECENT_UNSAVED);
    return [...saved, ...recent];
  }
}
