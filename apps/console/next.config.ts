// Next config for the Meridian console. Workspace packages export TypeScript source, so Next must
// transpile them; better-sqlite3 is a native addon and stays an external require at runtime, as do
// pino and prom-client (one copy per process: the process metrics register their observers once).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { NextConfig } from "next";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** On every answer of the console (pages, APIs, redirects). No frames: a same-site page (a sibling
 * subdomain) could frame the logged-in console and steer a click onto Failover or Delete, a genuine
 * same-origin request that the Origin check passes. The CSP carries frame-ancestors only: a script
 * policy would have to allow the inline scripts Next writes into every page. */
const SECURITY_HEADERS = [
  { key: "Content-Security-Policy", value: "frame-ancestors 'none'" },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "X-Content-Type-Options", value: "nosniff" },
  // The console's URLs (LB ids, experiment names, ?next=) stay within the console.
  { key: "Referrer-Policy", value: "same-origin" },
];

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  transpilePackages: ["@meridian/db", "@meridian/protocol", "@meridian/routing", "@meridian/tuner", "@meridian/workload", "@meridian/sim", "@meridian/proxy"],
  serverExternalPackages: ["better-sqlite3", "pino", "thread-stream", "prom-client"],
  // The workspace root holds the lockfile and node_modules; tell Turbopack so it does not guess.
  turbopack: { root: repoRoot },
  outputFileTracingRoot: repoRoot,
  typescript: { tsconfigPath: "tsconfig.json" },
  async headers() {
    return [{ source: "/:path*", headers: SECURITY_HEADERS }];
  },
};

export default nextConfig;
