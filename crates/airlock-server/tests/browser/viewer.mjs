// A viewer sees what waits but no decision buttons, on the inbox and on the approval page;
// a decision forged with the viewer's own session and CSRF token is refused by the gate;
// an approval decided elsewhere leaves the open inbox without a reload.
import { URL, INPUT, check, live, next, run, shot, signIn, step, text } from "./lib.mjs";

run("viewer", async ({ page }) => {
  const { approval_id: id, binding_digest } = INPUT;
  await signIn(page);
  await live(page);
  await page.waitForSelector(`#card-${id}`);
  check((await page.$$("form.decide")).length === 0, "no decision form in the inbox");
  check((await page.$$("button[value='approve'], button[value='reject']")).length === 0, "no buttons");
  check((await page.$$("p.keys")).length === 0, "no decision shortcuts");
  check((await text(page, "p.notice.info")).includes("deciding needs the approver role"), "it says why");
  check((await text(page, ".me .who")).endsWith("· viewer"), "the role is shown");
  await shot(page, "inbox-viewer");

  // The "a" shortcut does nothing for a viewer.
  await page.keyboard.press("j");
  await page.keyboard.press("a");
  check(page.url() === `${URL}/`, "a shortcut cannot decide");

  await page.goto(`${URL}/approvals/${id}`);
  check((await page.$$("form.decide")).length === 0, "no decision form on the approval page");
  check((await text(page, "p.notice.info")).includes("deciding needs the approver role"), "it says why");

  // The session's CSRF token is in the sign-out form; the role check is the gate's.
  const forged = await page.evaluate(
    async ({ id, binding_digest }) => {
      const csrf = document.querySelector("form[action='/logout'] input[name='csrf']").value;
      const body = new URLSearchParams({ csrf, decision: "approve", binding_digest });
      const reply = await fetch(`/approvals/${id}/decision`, { method: "POST", body });
      return { status: reply.status, text: await reply.text() };
    },
    { id, binding_digest },
  );
  check(forged.status === 403, `a viewer's decision is refused: ${forged.status}`);
  check(forged.text.includes("Not allowed") && forged.text.includes("approver"), "the refusal says why");

  // Someone else decides while the inbox is open: the card leaves by itself.
  await page.goto(`${URL}/`);
  await live(page);
  await page.evaluate(() => {
    window.airlockNoReload = true;
  });
  check((await text(page, "#count")) === "1", "one waits");
  step("watching");
  await next();
  await page.waitForSelector(`#card-${id}`, { state: "detached" });
  check(await page.evaluate(() => window.airlockNoReload === true), "the page reloaded");
  check((await text(page, "#count")) === "0", "the count follows");
  check(await page.isVisible("#empty"), "the empty note is back");
});
