// The undici pool that carries a target's request traffic (a replica's, or a peer LB's forwards and
// polls), built from the config's limits. undici fixes a pool's limits when it is created, so a
// config push that changes them replaces the pool: new requests take the new one, and the old one is
// closed gracefully, so the requests in flight on it finish (under the limits they started with).
// A replica's probes and scrapes go through one too, with options of their own (replicas.ts), so a
// pushed connect timeout reaches them the same way.
import { Pool } from "undici";
import type { Limits } from "@meridian/protocol";

function requestPoolOptions(limits: Limits): Pool.Options {
  return {
    connections: limits.maxConnectionsPerReplica,
    connectTimeout: limits.connectTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    bodyTimeout: limits.bodyTimeoutMs,
    keepAliveTimeout: 30_000,
    pipelining: 1,
  };
}

function sameOptions(a: Pool.Options, b: Pool.Options): boolean {
  return (Object.keys(a) as (keyof Pool.Options)[]).every((key) => a[key] === b[key]);
}

export class RequestPool {
  private current: Pool;
  private options: Pool.Options;
  /** Pools closing gracefully (replaced, or all of them once the target left the config), each with
   * the promise of its last request's end: a shutdown destroys them instead. */
  private readonly closing = new Map<Pool, Promise<void>>();

  constructor(
    private readonly origin: string,
    limits: Limits,
    /** The pool options the limits make: only a change in these replaces the pool. */
    private readonly optionsFor: (limits: Limits) => Pool.Options = requestPoolOptions,
  ) {
    this.options = optionsFor(limits);
    this.current = new Pool(origin, this.options);
  }

  /** The pool new requests go to. */
  get pool(): Pool {
    return this.current;
  }

  /** The options that pool was built with (undici does not expose them). */
  get poolOptions(): Readonly<Pool.Options> {
    return this.options;
  }

  /** Replaces the pool when the limits it was built with changed. */
  applyLimits(limits: Limits): void {
    const options = this.optionsFor(limits);
    if (sameOptions(options, this.options)) return;
    const old = this.current;
    this.options = options;
    this.current = new Pool(this.origin, options);
    this.closeGracefully(old);
  }

  /** Takes no new request; resolves once those in flight (on replaced pools too) have ended. */
  async close(): Promise<void> {
    this.closeGracefully(this.current);
    await Promise.all(this.closing.values());
  }

  /** Ends every request at once, in flight or queued, on the current pool and on replaced ones. */
  async destroy(): Promise<void> {
    const pools = [this.current, ...this.closing.keys()];
    this.closing.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }

  private closeGracefully(pool: Pool): void {
    if (this.closing.has(pool)) return;
    // Rejects only when destroyed first (a shutdown), which needs no waiting for.
    const ended = pool.close().then(
      () => undefined,
      () => undefined,
    );
    this.closing.set(pool, ended);
    void ended.then(() => this.closing.delete(pool));
  }
}
