// An approval page left open past the deadline: the click is refused and says it expired.
import { URL, INPUT, check, next, run, shot, signIn, step, text } from "./lib.mjs";

run("expired", async ({ page }) => {
  const { approval_id: id } = INPUT;
  await signIn(page);
  await page.goto(`${URL}/approvals/${id}`);
  await page.waitForSelector("html[data-stream='live']");
  step("ready");
  await next();
  await Promise.all([page.waitForNavigation(), page.click("button[value='approve']")]);
  check((await text(page, "h1")) === "Nothing was changed", "a click after the deadline is refused");
  const message = await text(page, "#refusal .message");
  check(message.includes("This approval expired"), `it says it expired: ${message}`);
  check(message.includes("was not recorded"), `and that nothing was recorded: ${message}`);
  await shot(page, "expired-refused");
});
