// A PostgreSQL server for one `npm test` run: the console suites' PostgreSQL pass creates a fresh
// database per test harness on it (apps/console/src/server/testing/harness.ts), so the suites do
// not each start a server of their own.
// Run (scripts/test.mjs does): node --import tsx scripts/lib/test-postgres.ts
// Prints one line, {"url":"postgres://meridian@127.0.0.1:<port>/postgres","pid":<postmaster pid>},
// once the server accepts connections; stops the server (by its PID) and deletes its directory when
// its stdin closes or it gets SIGTERM/SIGINT, then exits 0. Exits 1 with the reason on stderr when
// the server cannot start (e.g. Debian's postgresql package is missing).
import { startPostgres } from "@meridian/db/testing/postgres-server";

const server = await startPostgres().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
process.stdout.write(`${JSON.stringify({ url: server.url, pid: server.pid })}\n`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await server.stop();
  process.exit(0);
}
process.stdin.on("end", () => void stop());
process.stdin.resume();
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
