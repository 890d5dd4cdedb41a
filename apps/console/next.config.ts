// Next config for the Meridian console. Workspace packages export TypeScript source, so Next must
// transpile them; better-sqlite3 is a native addon and stays an external require at runtime, as do
// pino and prom-client (one copy per process: the process metrics register their observers once).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { NextConfig } from "next";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  transpilePackages: ["@meridian/db", "@meridian/protocol", "@meridian/routing", "@meridian/tuner", "@meridian/workload", "@meridian/sim", "@meridian/proxy"],
  serverExternalPackages: ["better-sqlite3", "pino", "thread-stream", "prom-client"],
  // The workspace root holds the lockfile and node_modules; tell Turbopack so it does not guess.
  turbopack: { root: repoRoot },
  outputFileTracingRoot: repoRoot,
  typescript: { tsconfigPath: "tsconfig.json" },
};

export default nextConfig;
