import { strict as assert } from "node:assert";
import { test } from "node:test";
import { safeNextPath } from "./safe-redirect";

test("same-origin paths survive, with their query and fragment", () => {
  assert.equal(safeNextPath("/replicas"), "/replicas");
  assert.equal(safeNextPath("/tuner?lb=lb-us#weights"), "/tuner?lb=lb-us#weights");
  assert.equal(safeNextPath("/a/../lbs"), "/lbs");
});

test("the issue's payloads and their relatives never leave the origin", () => {
  // What arrives after the query string is decoded: ?next=/%5Cevil.example/x and ?next=/%09/evil.example/x.
  for (const next of [
    "/\\evil.example/x",
    "/\t/evil.example/x",
    "//evil.example/x",
    "/\\/evil.example",
    "/\n/evil.example",
    "/ /evil.example",
    "/a/..//evil.example/x",
    "https://evil.example/x",
    "javascript:alert(1)",
    "evil.example",
    "",
  ]) {
    const path = safeNextPath(next);
    assert.equal(new URL(path, "http://console.test").origin, "http://console.test", `${JSON.stringify(next)} → ${path}`);
    assert.ok(!path.startsWith("//") && !path.includes("\\"), `${JSON.stringify(next)} → ${path}`);
  }
  assert.equal(safeNextPath("/\\evil.example/x"), "/");
  assert.equal(safeNextPath("/\t/evil.example/x"), "/");
  assert.equal(safeNextPath(undefined), "/");
});
