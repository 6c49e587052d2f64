// Sign in, keep the inbox open, and see an approval asked through the API arrive without a
// reload; then approve it with a click, and see it confirmed and gone.
import { URL, check, live, next, run, shot, signIn, step, text } from "./lib.mjs";

run("inbox", async ({ page }) => {
  await signIn(page);
  await live(page);
  check(await page.isVisible("#empty"), "an empty inbox says so");
  check((await text(page, "#count")) === "0", "the count starts at 0");
  await shot(page, "inbox-empty");
  // Set on this document only: a reload would lose it.
  await page.evaluate(() => {
    window.airlockNoReload = true;
  });
  step("ready");

  const { approval_id: id, agent, summary } = await next();
  const card = `#card-${id}`;
  await page.waitForSelector(card);
  check(await page.evaluate(() => window.airlockNoReload === true), "the page reloaded");
  check((await text(page, "#count")) === "1", "the count follows the cards");
  check(!(await page.isVisible("#empty")), "the empty note hides");
  check((await text(page, `${card} .agent`)) === `by ${agent}`, "the card names the agent");
  check((await text(page, `${card} .tool`)) === "email.send", "the card names the tool");
  check((await text(page, `${card} .badge`)) === "external", "the card shows the risk");
  check(await page.isVisible(`${card} .badge.risk-external`), "the risk badge has its colour");
  check((await text(page, `${card} .summary`)) === summary, "the card shows the summary");
  check(/\d+ (min|h)/.test(await text(page, `${card} .left`)), "the card shows the time left");
  await shot(page, "inbox-one");

  await Promise.all([
    page.waitForURL(/\?decided=/),
    page.click(`${card} button[value='approve']`),
  ]);
  const notice = await text(page, "p.notice.ok");
  check(notice.startsWith(`Approved: ${summary}`), `the decision is confirmed: ${notice}`);
  check((await page.$(card)) === null, "the decided card is gone");
  check(page.url().startsWith(URL), "still on this server");
});
