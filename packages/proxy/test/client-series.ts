// GET /metrics as a trusted scraper reads it: the per-client-key series are rendered only for a bearer
// the LB trusts with them (src/metrics-access.ts), here the LB token every test LB holds.
import { strict as assert } from "node:assert";
import { request } from "undici";
import { TOKEN } from "./helpers";

/** The exposition text with the client series, read with `bearer` (default: the test LBs' token). */
export async function scrapeWithClientSeries(lb: { url: string }, bearer: string = TOKEN): Promise<string> {
  const response = await request(`${lb.url}/metrics`, { headers: { authorization: `Bearer ${bearer}` } });
  assert.equal(response.statusCode, 200, "a trusted bearer reads /metrics");
  return response.body.text();
}
