// The inbox lists the newest first; keyboard only: j selects it, r goes to its reason,
// Enter rejects with that reason; then j and a approve the other one.
import { check, live, run, shot, signIn, INPUT, text } from "./lib.mjs";

run("reject", async ({ page }) => {
  const { newest, oldest, reason } = INPUT;
  await signIn(page);
  await live(page);
  const order = await page.$$eval("#cards article.card", (cards) =>
    cards.map((card) => card.dataset.approvalId),
  );
  check(order[0] === newest && order[1] === oldest, `newest first: ${order}`);
  const keys = await text(page, "p.keys");
  check(keys.includes("approve") && keys.includes("reject"), `the shortcuts are shown: ${keys}`);

  await page.keyboard.press("j");
  check(
    await page.$eval(`#card-${newest}`, (card) => card.classList.contains("selected")),
    "j selects the first card",
  );
  await page.keyboard.press("j");
  await page.keyboard.press("k");
  check(
    await page.$eval(`#card-${newest}`, (card) => card.classList.contains("selected")),
    "k goes back up",
  );
  await page.keyboard.press("r");
  check(
    await page.$eval(`#card-${newest} input.reason`, (input) => input === document.activeElement),
    "r focuses the reason",
  );
  await page.keyboard.type(reason);
  await shot(page, "inbox-rejecting");
  await Promise.all([page.waitForURL(/\?decided=/), page.keyboard.press("Enter")]);
  const notice = await text(page, "p.notice.warn");
  check(notice.startsWith("Rejected:") && notice.includes(reason), `rejected with the reason: ${notice}`);
  check((await page.$(`#card-${newest}`)) === null, "the rejected card is gone");
  check((await page.$(`#card-${oldest}`)) !== null, "the other card stays");

  // Then j selects the remaining one and a approves it.
  await page.keyboard.press("j");
  await Promise.all([page.waitForURL(new RegExp(`decided=${oldest}`)), page.keyboard.press("a")]);
  check((await text(page, "p.notice.ok")).startsWith("Approved:"), "a approves");
  check((await text(page, "#count")) === "0", "nothing left");
});
