// Issue 15 item 3: a replica added with the default home LB ("default: <the region's LB>") is owned
// by its region's LB: the replicas page names that LB, replicas.list has its homeLbId, and the LBs
// page lists it among the LB's owned replicas. Deletes the replica afterwards.
import { expect, test } from "@playwright/test";
import { DEMO_BASE_PORT, OPERATOR } from "./env";
import { loginViaApi, screenshot, trpcMutation, trpcQuery, type LbRow, type ReplicaRow } from "./helpers";

const NAME = "e2e-default-home";

test("a replica added with the default home LB is owned by its region's LB", async ({ page }, testInfo) => {
  await loginViaApi(page, OPERATOR);
  const lbs = await trpcQuery<LbRow[]>(page.request, "lbs.list");
  const regionLb = lbs.find((lb) => lb.state === "healthy" && lb.replicas.length > 0)!;
  const replicasBefore = await trpcQuery<ReplicaRow[]>(page.request, "replicas.list");
  const model = replicasBefore[0]!.model;

  await page.goto("/replicas");
  await page.getByTestId("replica-add-toggle").click();
  await page.getByTestId("replica-add-name").fill(NAME);
  // Nothing listens there: the replica stays unhealthy and takes no traffic from the other specs.
  await page.getByTestId("replica-add-url").fill(`http://127.0.0.1:${DEMO_BASE_PORT + 98}`);
  await page.getByTestId("replica-add-region").selectOption(regionLb.region);
  await page.getByTestId("replica-add-model").fill(model);
  // The default option names the LB it stands for.
  await expect(page.getByTestId("replica-add-home-lb").locator("option").first()).toHaveText(`default: ${regionLb.name}`);
  await expect(page.getByTestId("replica-add-home-lb")).toHaveValue("");
  await page.getByTestId("replica-add-submit").click();

  await expect(page.getByTestId(`replica-home-${NAME}`)).toHaveText(regionLb.name);
  const added = (await trpcQuery<ReplicaRow[]>(page.request, "replicas.list")).find((r) => r.name === NAME)!;
  try {
    expect(added.homeLbId).toBe(regionLb.id);
    expect((await trpcQuery<LbRow[]>(page.request, "lbs.list")).find((lb) => lb.id === regionLb.id)!.replicas).toContain(added.id);
    await page.goto("/lbs");
    await expect(page.getByTestId(`lb-replicas-${regionLb.name}`)).toContainText(NAME);
    await screenshot(page, testInfo, "default-home-lb");
  } finally {
    expect((await trpcMutation(page.request, "replicas.delete", { id: added.id })).status).toBe(200);
  }
});
