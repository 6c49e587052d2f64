// Approve with edits from the approval page, at desktop and at phone width: the asked
// arguments are shown as JSON, what a change does is shown as it is typed (and a text
// that is not a JSON object says so), and the button approves exactly the edited call.
import { check, run, shot, signIn, INPUT, URL, text } from "./lib.mjs";

run("edit", async ({ page }) => {
  await signIn(page);
  for (const [label, width, height] of [
    ["desktop", 1280, 800],
    ["phone", 360, 740],
  ]) {
    const { id, to } = INPUT[label];
    await page.setViewportSize({ width, height });
    await page.goto(`${URL}/approvals/${id}`);
    await page.click("details#edit summary");
    const area = "#edit-arguments";
    const asked = JSON.parse(await page.inputValue(area));
    check(typeof asked.to === "string" && asked.to !== to, `the asked arguments are shown: ${JSON.stringify(asked)}`);
    check((await text(page, "#edit-diff")) === "No change yet.", "nothing changed yet");

    await page.fill(area, "{ not json");
    check((await text(page, "#edit-diff")).startsWith("Not JSON"), "a text that is not JSON says so");
    await page.fill(area, "[1, 2]");
    check((await text(page, "#edit-diff")).includes("one JSON object"), "an array is not the arguments");

    await page.fill(area, JSON.stringify({ ...asked, to }, null, 2));
    const diff = await text(page, "#edit-diff");
    check(diff.includes(`- to: ${JSON.stringify(asked.to)}`), `the diff shows what goes: ${diff}`);
    check(diff.includes(`+ to: ${JSON.stringify(to)}`), `the diff shows what comes: ${diff}`);
    check(!diff.includes("body"), `unchanged keys are not listed: ${diff}`);
    await shot(page, `approval-edit-${label}`);
    await page.setViewportSize({ width, height });
    await page.fill("form.edit-form input.reason", `edited on the ${label}`);
    await Promise.all([
      page.waitForURL(/\?decided=/),
      page.click("form.edit-form button[value='edit']"),
    ]);
    const notice = await text(page, "p.notice.ok");
    check(notice.startsWith("Approved:"), `approved: ${notice}`);
  }
});
