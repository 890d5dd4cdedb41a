// Starts the console's server services once per Next server process (instrumentation-node.ts).
// Next compiles this file for the edge runtime too: the Node.js-only work sits behind the
// NEXT_RUNTIME check in a module of its own, which the edge build leaves out.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { registerNode } = await import("./instrumentation-node");
    await registerNode();
  }
}
