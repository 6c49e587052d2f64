// Signing in and out, and forms that do not carry the session's CSRF token.
import http from "node:http";
import { URL, INPUT, check, run, shot, signIn, text } from "./lib.mjs";

run("session", async ({ page, context }) => {
  const { approval_id: id, binding_digest, agent_token } = INPUT;

  // Not signed in: every page leads to the sign-in form, and back after it.
  await page.goto(`${URL}/approvals/${id}`);
  check(page.url() === `${URL}/login?next=%2Fapprovals%2F${id}`, `to sign in: ${page.url()}`);
  await shot(page, "login");
  await page.fill("#token", "alk_not_a_token");
  await Promise.all([page.waitForNavigation(), page.click("form[action='/login'] button")]);
  check((await text(page, "p.notice.error")).includes("unknown or has been revoked"), "unknown token");
  await page.fill("#token", agent_token);
  await Promise.all([page.waitForNavigation(), page.click("form[action='/login'] button")]);
  check((await text(page, "p.notice.error")).includes("Agents never use the inbox"), "agent token");
  check((await context.cookies()).length === 0, "no cookie for a refused sign-in");

  await signIn(page);
  const [cookie] = await context.cookies();
  check(cookie && cookie.name === "airlock_session", "a session cookie");
  check(cookie.httpOnly === true, "the cookie is HttpOnly");
  check(cookie.sameSite === "Strict", `the cookie is SameSite=Strict: ${cookie.sameSite}`);
  check(await page.evaluate(() => document.cookie === ""), "scripts cannot read it");

  // A form without the CSRF field.
  await page.evaluate(
    ({ id, binding_digest }) => {
      const form = document.createElement("form");
      form.method = "post";
      form.action = `/approvals/${id}/decision`;
      for (const [name, value] of Object.entries({ decision: "approve", binding_digest })) {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = name;
        input.value = value;
        form.append(input);
      }
      document.body.append(form);
      form.submit();
    },
    { id, binding_digest },
  );
  await page.waitForURL(`${URL}/approvals/${id}/decision`);
  check((await text(page, "h1")) === "Form refused", "a form without CSRF is refused");
  check((await text(page, "p.message")).includes("Nothing was changed"), "and says nothing changed");

  // The same form, CSRF token included, posted from another site (localhost is not 127.0.0.1).
  await page.goto(`${URL}/`);
  const csrf = await page.$eval("form[action='/logout'] input[name='csrf']", (i) => i.value);
  const attacker = http.createServer((_, response) => {
    response.setHeader("content-type", "text/html");
    response.end(`<!doctype html><form method="post" action="${URL}/approvals/${id}/decision">
      <input name="csrf" value="${csrf}"><input name="decision" value="approve">
      <input name="binding_digest" value="${binding_digest}"></form>
      <script>document.forms[0].submit()</script>`);
  });
  await new Promise((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  const port = attacker.address().port;
  await page.goto(`http://localhost:${port}/`);
  await page.waitForURL(`${URL}/approvals/${id}/decision`);
  const refused = await text(page, "h1");
  attacker.close();
  check(refused === "Form refused", `a cross-site form is refused: ${refused}`);

  // Sign out: the cookie goes, and the old value no longer opens anything.
  await page.goto(`${URL}/`);
  await Promise.all([page.waitForURL(/\/login\?signed_out=1$/), page.click(".me button")]);
  check((await text(page, "p.notice.ok")) === "You are signed out.", "signed out");
  check((await context.cookies()).length === 0, "the cookie is deleted");
  await context.addCookies([cookie]);
  await page.goto(`${URL}/`);
  check(page.url() === `${URL}/login`, `the old cookie is dead: ${page.url()}`);
  await page.goto(`${URL}/audit`);
  check(page.url().startsWith(`${URL}/login?next=`), "every page asks to sign in");
});
