// "Approve all of this turn" from an approval's page, at desktop and phone width: the
// form lists the turn's three calls, all checked; unchecking one and approving decides
// the other two, and the results say so item by item.
import { check, run, shot, signIn, INPUT, URL, text } from "./lib.mjs";

run("turn", async ({ page }) => {
  const { first, skip, ids } = INPUT;
  await signIn(page);
  for (const [width, height] of [
    [1280, 800],
    [360, 740],
  ]) {
    await page.setViewportSize({ width, height });
    await page.goto(`${URL}/approvals/${first}`);
    const summary = await text(page, "details#turn summary");
    check(summary.includes("3 calls"), `the turn's calls are offered together: ${summary}`);
    const boxes = await page.$$eval("form.turn-form input[name=item]", (inputs) =>
      inputs.map((input) => ({ id: input.value.split(" ")[0], checked: input.checked })),
    );
    check(boxes.length === 3, `one checkbox per call: ${JSON.stringify(boxes)}`);
    check(boxes.every((box) => box.checked), "all checked by default");
    check(
      ids.every((id) => boxes.some((box) => box.id === id)),
      `the listed calls are the turn's: ${JSON.stringify(boxes)}`,
    );
  }
  // Screenshots at both widths (and no sideways scroll), then at phone width: opt out of
  // one, approve the rest.
  await shot(page, "approval-turn");
  await page.setViewportSize({ width: 360, height: 740 });
  await page.uncheck(`form.turn-form input[value^="${skip} "]`);
  await page.fill("form.turn-form input.reason", "the turn, but not that one");
  await Promise.all([
    page.waitForURL(/\/turns\/decision$/),
    page.click("form.turn-form button[value='approve']"),
  ]);
  const heading = await text(page, "#turn-results h1");
  check(heading === "Decided 2 of 2", `two decided: ${heading}`);
  const decided = await page.$$eval("li.turn-result.ok", (items) =>
    items.map((item) => item.dataset.approvalId),
  );
  check(decided.length === 2 && !decided.includes(skip), `the unchecked one stayed out: ${decided}`);
  await shot(page, "approval-turn-results");
});
