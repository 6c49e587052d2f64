// A signed-in person follows a link to an approval from another site (a mail, a chat):
// the browser does not send the SameSite=Strict cookie with such a navigation, and the
// page goes on from this site, so the person lands on the approval, signed in, and
// decides it.
import { URL, INPUT, check, run, signIn, text } from "./lib.mjs";

run("crosssite", async ({ page }) => {
  const { id } = INPUT;
  await signIn(page);

  // The same server under another name is another site: a page there links to the approval.
  const elsewhere = URL.replace("127.0.0.1", "localhost");
  check(elsewhere !== URL, `the server's URL names 127.0.0.1: ${URL}`);
  await page.goto(`${elsewhere}/login`);
  await page.evaluate((href) => {
    const link = document.createElement("a");
    link.id = "to-airlock";
    link.href = href;
    link.textContent = "An agent asks for your approval";
    document.body.appendChild(link);
  }, `${URL}/approvals/${id}`);
  await Promise.all([page.waitForURL(`${URL}/approvals/${id}`), page.click("#to-airlock")]);
  await page.waitForSelector("#approval");
  check((await text(page, ".who")).startsWith("ana"), "signed in as the approver");

  await Promise.all([page.waitForURL(/\/\?decided=/), page.click("form.decide button[value='approve']")]);
  const notice = await text(page, "p.notice.ok");
  check(notice.startsWith("Approved"), `the decision is confirmed: ${notice}`);
});
