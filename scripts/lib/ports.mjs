// ports: the port settings of `npm start` and the demo fleet, and whether a port is free. Not a CLI;
// imported by scripts/start.mjs (plain ESM, so before any dependency is installed) and
// scripts/demo-fleet.ts. Prints nothing.
import { createServer } from "node:net";

/**
 * The port in env[name] (fallback when unset or empty): a whole number from 1 to max. Throws an
 * Error whose message is one line naming the variable and the value.
 */
export function readPortEnv(env, name, fallback, max = 65535) {
  const text = env[name];
  if (text === undefined || text.trim() === "") return fallback;
  const port = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(port) || port < 1 || port > max) {
    throw new Error(`${name} must be a whole number from 1 to ${max}, not ${JSON.stringify(text)}`);
  }
  return port;
}

/** Resolves true when nothing listens on host:port (a listener bound there now would succeed). */
export function portIsFree(host, port) {
  return new Promise((done) => {
    const probe = createServer();
    probe.once("error", () => done(false));
    probe.listen(port, host, () => probe.close(() => done(true)));
  });
}
