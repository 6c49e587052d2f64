// What every browser scenario shares: a headless Debian chromium driven by playwright-core,
// signing in, screenshots at desktop and phone widths, and the line protocol with the Rust
// test that started this script.
//
// Protocol: the script prints `step NAME JSON` lines on stdout when it reaches a point the
// Rust side waits for, and reads one JSON object per line on stdin when it waits for the
// Rust side. Anything else on stdout is only logged. Exit status 0 means every check held.
//
// Environment (set by the Rust test): AIRLOCK_TEST_PLAYWRIGHT (a node_modules folder with
// playwright-core), AIRLOCK_URL, AIRLOCK_TOKEN, AIRLOCK_ARTIFACTS (screenshots go there),
// AIRLOCK_INPUT (JSON). A missing browser or library is a failure, never a skip.

import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";

export const CHROMIUM = "/usr/bin/chromium";
export const URL = need("AIRLOCK_URL");
export const TOKEN = need("AIRLOCK_TOKEN");
export const INPUT = JSON.parse(process.env.AIRLOCK_INPUT || "{}");
const ARTIFACTS = need("AIRLOCK_ARTIFACTS");
const WIDTHS = [
  ["desktop", 1280, 800],
  ["phone", 360, 740],
];

function need(name) {
  const value = process.env[name];
  if (!value) fail(`${name} is not set`);
  return value;
}

export function fail(message) {
  console.error(`browser scenario failed: ${message}`);
  process.exit(1);
}

function playwright() {
  const modules = need("AIRLOCK_TEST_PLAYWRIGHT");
  const library = path.join(modules, "playwright-core");
  if (!existsSync(path.join(library, "package.json"))) {
    fail(`playwright-core is not installed in ${modules} (scripts/test.sh installs it)`);
  }
  if (!existsSync(CHROMIUM)) {
    fail(`${CHROMIUM} is missing (scripts/test.sh installs Debian's chromium)`);
  }
  return createRequire(import.meta.url)(library);
}

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

/// Tells the Rust side that `name` is reached.
export function step(name, data = {}) {
  process.stdout.write(`step ${name} ${JSON.stringify(data)}\n`);
}

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/// Waits for the Rust side's next message.
export async function next() {
  const { value, done } = await lines.next();
  if (done) throw new Error("the Rust side closed stdin before sending what was awaited");
  return JSON.parse(value);
}

/// A fresh browser (its own profile folder) with one page; `problems` collects script
/// errors and console errors (a Content-Security-Policy violation is one).
export async function browser() {
  const { chromium } = playwright();
  const profile = mkdtempSync(path.join(tmpdir(), "airlock-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  context.setDefaultTimeout(30000);
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  watch(page, problems);
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, problems, close };
}

export function watch(page, problems) {
  page.on("pageerror", (error) => problems.push(`script error: ${error.message}`));
  page.on("console", (message) => {
    // A refusal page is answered with 403/409 (422: a policy text that does not load); the
    // browser logs the status, which is expected.
    if (message.type() === "error" && !/status of (403|409|401|404|422)/.test(message.text())) {
      problems.push(`console error: ${message.text()}`);
    }
  });
}

/// Signs in on the login page with `token` and lands on the inbox.
export async function signIn(page, token = TOKEN) {
  await page.goto(`${URL}/login`);
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(`${URL}/`), page.click("form[action='/login'] button")]);
  await page.waitForSelector("#inbox");
}

/// Waits until the inbox's event stream is connected.
export async function live(page) {
  await page.waitForSelector("#live[data-state='live']");
}

/// Full-page screenshots at desktop and phone widths, after checking that the page does not
/// scroll sideways at either (readable at 360 px).
export async function shot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const [label, width, height] of WIDTHS) {
    await page.setViewportSize({ width, height });
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    check(overflow <= 1, `${name} scrolls sideways by ${overflow}px at ${width}px wide`);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

export async function text(page, selector) {
  return ((await page.textContent(selector)) || "").replace(/\s+/g, " ").trim();
}

/// Runs a scenario: exit 0 when it returns, 1 (with a screenshot of the page) when it throws
/// or when a page logged a script or console error.
export async function run(name, scenario) {
  let session;
  try {
    session = await browser();
    await scenario(session);
    check(session.problems.length === 0, `the pages logged: ${session.problems.join(" | ")}`);
    step("done");
    await session.close();
    process.exit(0);
  } catch (error) {
    console.error(`browser scenario ${name} failed: ${error && error.stack ? error.stack : error}`);
    if (session) {
      try {
        mkdirSync(ARTIFACTS, { recursive: true });
        console.error(`page at failure: ${session.page.url()}`);
        await session.page.screenshot({ path: path.join(ARTIFACTS, `failed-${name}.png`), fullPage: true });
        await session.close();
      } catch (_) {
        // The failure above is what matters.
      }
    }
    process.exit(1);
  }
}
