// A loopback port nothing listens on, for tests that must know an LB's URL before it starts.
import "server-only";
import { createServer } from "node:net";

/** Taken from the OS, then released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
