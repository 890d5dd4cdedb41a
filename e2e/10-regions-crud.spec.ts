import { expect, test } from "@playwright/test";
import { OPERATOR } from "./env";
import { loginViaApi } from "./helpers";

test("an operator creates, renames and deletes a region; a bad name shows the server's message", async ({ page }) => {
  await loginViaApi(page, OPERATOR);
  await page.goto("/regions");
  await expect(page.getByTestId("region-table")).toBeVisible();

  await page.getByTestId("region-create-name").fill("Not A Valid Name");
  await page.getByTestId("region-create-submit").click();
  await expect(page.getByTestId("region-create-error")).toContainText("lowercase");

  await page.getByTestId("region-create-name").fill("e2e-test-region");
  await page.getByTestId("region-create-display").fill("E2E scratch region");
  await page.getByTestId("region-create-submit").click();
  await expect(page.getByTestId("region-row-e2e-test-region")).toContainText("E2E scratch region");
  await expect(page.getByTestId("region-create-error")).toHaveCount(0);

  await page.getByTestId("region-edit-e2e-test-region").click();
  await page.getByTestId("region-edit-display-e2e-test-region").fill("E2E renamed");
  await page.getByTestId("region-edit-save-e2e-test-region").click();
  await expect(page.getByTestId("region-row-e2e-test-region")).toContainText("E2E renamed");

  await page.getByTestId("region-delete-e2e-test-region").click();
  await page.getByTestId("region-delete-e2e-test-region-confirm").click();
  await expect(page.getByTestId("region-row-e2e-test-region")).toHaveCount(0);
});
