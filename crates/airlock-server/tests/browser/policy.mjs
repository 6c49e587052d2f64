// Changing the policy from its page: a text that does not load shows its errors and saves
// nothing; a good one first shows what would change over the last 7 days (the changed
// call, listed), and only the button on that page saves it.
import { INPUT, URL, check, next, run, shot, signIn, step, text } from "./lib.mjs";

run("policy", async ({ page }) => {
  const { broken, candidate, call_id } = INPUT;
  await signIn(page);
  await page.goto(`${URL}/policy`);
  check((await text(page, "#policy-version")) === "2", "version 2 is in force");
  check(await page.isVisible("#policy-source"), "an admin gets the edit form");

  // A text that does not load: its errors, by line and column, and the form again.
  await page.fill("#policy-source", broken);
  await Promise.all([page.waitForNavigation(), page.click("#policy-preview")]);
  check(await page.isVisible("#policy-errors"), "the errors are shown");
  check((await text(page, "ul.errors")).includes("2:"), "with their line");
  check((await page.$$("#policy-save")).length === 0, "no save button for a text that does not load");

  // A good one: what would change, before any save.
  await page.fill("#policy-source", candidate);
  await Promise.all([page.waitForNavigation(), page.click("#policy-preview")]);
  check((await text(page, "#policy-replay h1")) === "What would change over the last 7 days", "the heading");
  check((await text(page, "#replay-changed")) === "1", "one call changes");
  check((await text(page, "#replay-loosened")) === "1", "toward allow");
  const row = await text(page, `#replay-changes tr[data-call='${call_id}']`);
  check(row.includes("email.send") && row.includes("ask → allow") && row.includes("mail-is-fine"), `the changed call: ${row}`);
  await shot(page, "policy-preview");
  step("previewed");

  await next();
  await Promise.all([page.waitForURL(`${URL}/policy`), page.click("#policy-save")]);
  check((await text(page, "#policy-version")) === "3", "version 3 is in force");
  step("saved");
});
