// A throwaway PostgreSQL server for tests: initdb in a temporary directory, `postgres` on a free
// loopback port (a Unix socket only inside that directory), stopped by its PID and deleted by
// stop(). It uses the system's PostgreSQL binaries (Debian's `postgresql` package, which .ci/run
// installs when initdb is missing): MERIDIAN_PG_BIN names their folder, otherwise the newest
// /usr/lib/postgresql/<version>/bin, otherwise initdb on PATH. PostgreSQL refuses to run as root, so
// under uid 0 the server runs as the `postgres` user (or `nobody`) through setpriv, which execs
// in place: the PID we hold is the postmaster's own.
// Use: const pg = await startPostgres(); const url = await pg.createDatabase("t1"); ... await pg.stop();
import { after, before } from "node:test";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface PostgresServer {
  /** Superuser URL of the `postgres` database. */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Fast shutdown by PID, then deletes the data directory. Idempotent. */
  stop(): Promise<void>;
}

const SUPERUSER = "meridian";

/** The folder holding initdb and postgres, or null when PostgreSQL is not installed. */
function findPostgresBin(): string | null {
  const fromEnv = process.env.MERIDIAN_PG_BIN;
  if (fromEnv) return existsSync(join(fromEnv, "initdb")) ? fromEnv : null;
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres"))) return dir;
  }
  return null;
}

/** Under root: the uid/gid of an unprivileged account to run the server as. */
function unprivilegedAccount(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
      const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
      return { uid, gid };
    } catch {
      // no such account; try the next
    }
  }
  throw new Error("running as root and neither a `postgres` nor a `nobody` account exists to run PostgreSQL as");
}

function command(bin: string, program: string, args: string[], account: { uid: number; gid: number } | null): [string, string[]] {
  const path = join(bin, program);
  if (!account) return [path, args];
  return ["setpriv", [`--reuid=${account.uid}`, `--regid=${account.gid}`, "--clear-groups", "--", path, ...args]];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once("exit", resolve));
}

/** Polls until the server accepts a query, the postmaster exits, or the bound (a hung start) passes. */
async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited during startup:\n${output()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 60 s:\n${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (no initdb): apt-get install postgresql, or set MERIDIAN_PG_BIN");
  const account = unprivilegedAccount();
  const dir = mkdtempSync(join(tmpdir(), "meridian-pg-"));
  if (account) chownSync(dir, account.uid, account.gid);
  const data = join(dir, "data");
  const [initdb, initArgs] = command(bin, "initdb", ["-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"], account);
  try {
    execFileSync(initdb, initArgs, { stdio: "pipe", cwd: dir });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
    throw new Error(`initdb failed: ${stderr}`);
  }
  const port = await freePort();
  // Durability off: a test database is thrown away, and fsyncs would only slow the suites down.
  const serverArgs = ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1"];
  serverArgs.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200");
  const [postgres, args] = command(bin, "postgres", serverArgs, account);
  const child = spawn(postgres, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const pid = child.pid;
  if (pid === undefined) throw new Error("postgres did not start");
  // A test process that dies without stop() must not leave its server behind.
  const killOnExit = () => {
    if (child.exitCode === null) process.kill(pid, "SIGKILL");
  };
  process.once("exit", killOnExit);
  const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(pid, "SIGINT"); // PostgreSQL's "fast" shutdown
      await exited(child);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(url, child, () => log);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    port,
    pid,
    createDatabase: (name: string) => createDatabaseOn(url, name),
    stop,
  };
}

/** Creates an empty database `name` on the server whose superuser URL is `serverUrl` (a server
 * started by startPostgres, here or in another process) and returns the new database's URL. */
export async function createDatabaseOn(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Both stores for one test file: SQLite files in a temporary directory, and databases on a real
 * PostgreSQL server started before the file's tests and stopped (and the directory removed) after. */
export function storesForTests(prefix: string): { sqlitePath(name: string): string; postgresUrl(name: string): Promise<string> } {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  let server: PostgresServer | undefined;
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    sqlitePath: (name) => join(dir, `${name}.db`),
    postgresUrl: (name) => server!.createDatabase(name),
  };
}
