// A pass-through in front of an engine that records the Authorization header of each completion
// request, so a test can see what credential, if any, the LB passed on to the engine.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import type { Engine } from "./helpers";

export interface AuthorizationTap {
  /** The engine as an LB config should name it: reached through the tap. */
  replica: Engine;
  /** The Authorization of each POST that reached the engine, in order (undefined: none). */
  authorizations: (string | undefined)[];
  close(): void;
}

export async function startAuthorizationTap(engine: Engine): Promise<AuthorizationTap> {
  const authorizations: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    if (req.method === "POST") authorizations.push(req.headers.authorization);
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.authorization;
    void request(`${engine.url}${req.url}`, { method: req.method as "GET", headers, body: req.method === "POST" ? req : null }).then(
      (upstream) => {
        res.writeHead(upstream.statusCode, upstream.headers as Record<string, string>);
        upstream.body.pipe(res);
      },
      () => res.writeHead(502).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { replica: { ...engine, url } as Engine, authorizations, close: () => server.close() };
}
