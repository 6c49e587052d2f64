// An agent's run waits on a mail: the approval page shows the session's messages; "approve
// and remember" mints a standing rule; then the session's timeline, the rules page (revoke),
// the audit log (chain badge, filters) and the policy with its history.
import { URL, INPUT, check, next, run, shot, signIn, step, text } from "./lib.mjs";

run("tour", async ({ page }) => {
  const { approval_id: id, session_id, message, policy_digest } = INPUT;
  await signIn(page);

  await page.goto(`${URL}/approvals/${id}`);
  const context = await text(page, "section.context");
  check(context.includes(message), `the session's messages are shown: ${context}`);
  check((await text(page, "dl.facts")).includes(session_id), "the session is named");
  await shot(page, "approval-in-session");

  await page.click("details.remember summary");
  await page.selectOption("select[name='scope']", "agent");
  await page.selectOption("select[name='expires_in']", "1d");
  await Promise.all([page.waitForURL(/\?decided=/), page.click("button[value='remember']")]);
  check((await text(page, "p.notice.ok")).startsWith("Approved:"), "approved");
  step("remembered");
  const { rule_id, reply } = await next();

  // The session's timeline, from the run journal.
  await page.goto(`${URL}/sessions/${session_id}`);
  const kinds = await page.$$eval("ol.timeline li .kind", (n) => n.map((x) => x.textContent));
  for (const kind of ["run started", "tool call", "approval required", "tool decided", "run completed"]) {
    check(kinds.includes(kind), `the timeline has ${kind}: ${kinds}`);
  }
  check((await text(page, "ol.timeline")).includes(reply), "the timeline has the model's text");
  await shot(page, "session");

  // The rule, revoked from its row.
  await page.goto(`${URL}/rules`);
  const row = `tr:has(form[action='/rules/${rule_id}/revoke'])`;
  check((await text(page, row)).includes("bob@example.com"), "the rule's target is shown");
  await shot(page, "rules");
  await Promise.all([page.waitForURL(/\?revoked=/), page.click(`${row} button`)]);
  check((await text(page, "p.notice.ok")) === `Revoked ${rule_id}.`, "the revocation is confirmed");
  check((await page.$$(`form[action='/rules/${rule_id}/revoke']`)).length === 0, "no revoke button left");
  check((await text(page, "table.records tbody")).includes("revoked"), "the rule shows as revoked");

  // The audit log: the server's chain check, and filters.
  await page.goto(`${URL}/audit`);
  check((await text(page, "#chain .badge")) === "✓ chain verified", "the chain is verified");
  await shot(page, "audit");
  await page.fill("input[name='kind']", "rule.");
  await Promise.all([page.waitForNavigation(), page.click("form.filters button")]);
  const ruleKinds = await page.$$eval("table.records tbody tr td:nth-child(4)", (n) => n.map((x) => x.textContent));
  check(
    ruleKinds.length === 2 && ruleKinds.includes("rule.created") && ruleKinds.includes("rule.revoked"),
    `the kind filter: ${ruleKinds}`,
  );
  await page.goto(`${URL}/audit?actor=ana`);
  const actors = await page.$$eval("table.records tbody tr td:nth-child(3)", (n) => n.map((x) => x.textContent));
  check(actors.length >= 3 && actors.every((actor) => actor === "ana"), `the actor filter: ${actors}`);

  // The policy in force, and its history.
  await page.goto(`${URL}/policy`);
  check((await text(page, "#policy-digest")) === policy_digest, "the digest in force");
  const versions = await page.$$eval("#policy-history li", (n) => n.map((x) => x.dataset.version));
  check(JSON.stringify(versions) === '["2","1"]', `the history, newest first: ${versions}`);
  await shot(page, "policy");
  await Promise.all([page.waitForNavigation(), page.click("#policy-history a")]);
  check((await text(page, "#policy-version")) === "1", "an older version opens");
  check((await text(page, "p.notice.warn")).includes("no longer in force"), "and says it is old");
});
