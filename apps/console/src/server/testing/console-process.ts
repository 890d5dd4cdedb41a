// One console's server side without Next (a ConsoleRuntime joined to the leadership election), as a
// child process for the two-console test (leadership/two-consoles.test.ts), which kills it by PID.
// Run: node --conditions=react-server --import tsx apps/console/src/server/testing/console-process.ts
// Env: HA_DB_PATH (the shared SQLite file) or DATABASE_URL (the shared PostgreSQL), HA_LB_TOKEN (what the test's LBs were created with),
//      HA_CONSOLE_ID.
// Prints one JSON line each time its view of the leadership changes:
//   {"id":"a","isLeader":true,"term":3,"leader":"a","at":1700000000000}
// SIGTERM stops it (a leader releases its lease) and exits 0.
import "server-only";
import pino from "pino";
import { z } from "zod";
import { createDatabase } from "@meridian/db";
import { findRepoRoot } from "../../env";
import { ConsoleRuntime } from "../runtime/runtime";

const env = z
  .object({ HA_DB_PATH: z.string().min(1), DATABASE_URL: z.string().optional(), HA_LB_TOKEN: z.string().min(8), HA_CONSOLE_ID: z.string().min(1) })
  .parse(process.env);
const database = createDatabase({ DATABASE_URL: env.DATABASE_URL, sqlitePath: env.HA_DB_PATH });
const runtime = new ConsoleRuntime(
  database,
  {
    entrypointsTokenSha256: null,
    newLbToken: () => env.HA_LB_TOKEN,
    repoRoot: findRepoRoot(),
    healthIntervalMs: 500,
    failoverAfter: 3,
    autoFailover: false,
    sessionTtlMs: 3_600_000,
    traceDirs: [],
    leadership: { id: env.HA_CONSOLE_ID, url: `console-${env.HA_CONSOLE_ID}` },
  },
  pino({ level: "warn" }, pino.destination(2)),
);
await runtime.start();

let last = "";
const report = setInterval(() => {
  const view = runtime.leadership.view();
  const key = `${view.isLeader}/${view.term}/${view.leader}`;
  if (key === last) return;
  last = key;
  process.stdout.write(`${JSON.stringify({ id: env.HA_CONSOLE_ID, isLeader: view.isLeader, term: view.term, leader: view.leader, at: Date.now() })}\n`);
}, 20);

process.once("SIGTERM", () => {
  clearInterval(report);
  void runtime
    .stop()
    .then(() => database.close())
    .then(() => process.exit(0));
});
