// A page left open while the approval is decided through the API: the page says so live,
// and its click is refused with a clear message. A page whose binding digest does not match
// the approval is refused too. On the way, the approval page of an edit shows its diff.
import { URL, INPUT, check, next, run, shot, signIn, step, text } from "./lib.mjs";

run("stale", async ({ page }) => {
  const { mail, edit } = INPUT;
  await signIn(page);

  // The edit's page: summary, rule, the diff, pretty arguments, the binding digest.
  await page.goto(`${URL}/approvals/${edit.id}`);
  check((await text(page, "h1.summary")) === edit.summary, "the page shows the summary");
  check((await text(page, "#binding-digest")) === edit.binding_digest, "the page shows the digest");
  const removed = await page.$$eval(".diff .removed span:last-child", (n) => n.map((x) => x.textContent));
  const added = await page.$$eval(".diff .added span:last-child", (n) => n.map((x) => x.textContent));
  check(JSON.stringify(removed) === JSON.stringify(edit.removed), `removed lines: ${removed}`);
  check(JSON.stringify(added) === JSON.stringify(edit.added), `added lines: ${added}`);
  const args = await page.textContent("pre.json");
  check(args.includes('\n  "path": '), `arguments are pretty JSON: ${args}`);
  check(JSON.stringify(JSON.parse(args)) === JSON.stringify(JSON.parse(edit.arguments)), "the arguments are the call's");
  const facts = await text(page, "dl.facts");
  check(facts.includes(edit.rule), `the rule that asked is shown: ${facts}`);
  await shot(page, "approval-edit");

  // A tampered digest: the gate refuses, nothing changes.
  await page.$eval("input[name='binding_digest']", (input) => {
    input.value = "0".repeat(64);
  });
  await Promise.all([page.waitForNavigation(), page.click("button[value='approve']")]);
  check((await text(page, "h1")) === "Nothing was changed", "a mismatch is refused");
  const mismatch = await text(page, "#refusal .message");
  check(mismatch.includes("does not match") && mismatch.includes(edit.binding_digest), mismatch);

  // The mail's page, left open while someone else decides.
  await page.goto(`${URL}/approvals/${mail.id}`);
  check(await page.isHidden("#live-banner"), "no banner while nobody decided");
  // The stream must be connected before the decision, or the banner has nothing to show.
  await page.waitForSelector("html[data-stream='live']");
  step("ready");
  const { decided_by, reason } = await next();
  await page.waitForSelector("#live-banner:not([hidden])");
  const banner = await text(page, "#live-banner");
  check(banner.includes("approved elsewhere"), `the banner says it: ${banner}`);

  await page.fill("input.reason", "too late");
  await Promise.all([page.waitForNavigation(), page.click("button[value='reject']")]);
  check((await text(page, "h1")) === "Nothing was changed", "a stale click is refused");
  const message = await text(page, "#refusal .message");
  check(
    message.includes(`already approved by ${decided_by}`) && message.includes(reason),
    `the refusal says who decided first and why: ${message}`,
  );
  await shot(page, "stale-refused");
});
