// The dashboard in a real browser against a real ringmasterd: sign in, submit through the
// form (after the API's validation error for a bad value), see the job PENDING in the list,
// cancel it from its page behind the confirmation, see the node registered through the API
// on the cluster map; screenshots of each page at 1,280 px and at phone width.
//
// The tests run in order and share one server, one browser and the job they create.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, startBrowser, stopAll, call, screenshot } from "./harness.mjs";

const T = { timeout: 60000 };
let server, page, jobId, consoleErrors = [];

before(async () => {
  server = await startServer();
  ({ page } = await startBrowser());
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
}, { timeout: 240000 });

after(async () => { await stopAll(); }, { timeout: 60000 });

// Waits for the text of a locator to match re (the page polls every 3 s).
async function expectText(locator, re, timeout = 10000) {
  const deadline = Date.now() + timeout;
  let last = "";
  while (Date.now() < deadline) {
    last = (await locator.textContent({ timeout: 2000 }).catch(() => "")) || "";
    if (re.test(last)) return last;
    await page.waitForTimeout(150);
  }
  assert.fail(`expected ${re} in "${last.slice(0, 300)}"`);
}

test("the dashboard asks for a token, refuses a wrong one and accepts the admin's", T, async () => {
  await page.goto(server.url + "/");
  await page.waitForURL(/#\/login$/);
  await page.fill("#token", "not-a-real-token");
  await page.click("#login-form button[type=submit]");
  await expectText(page.locator("#login-error"), /refused/i);
  await screenshot(page, "login-1280");
  await page.fill("#token", server.token);
  await page.click("#login-form button[type=submit]");
  await page.waitForURL(/#\/cluster$/);
  await expectText(page.locator("#who"), /admin/);
  assert.equal(await page.evaluate(() => localStorage.getItem("ringmaster.token")), server.token);
  // A fresh appliance: the empty states say so.
  await expectText(page.locator("#gpu-map"), /No nodes registered/);
  await page.click('#nav a[data-nav="jobs"]');
  await expectText(page.locator("#view"), /No jobs yet/);
});

test("the submit form shows the API's message beside a bad field, then submits", T, async () => {
  await page.click('#nav a[data-nav="submit"]');
  await page.waitForURL(/#\/submit$/);
  await page.fill("#f-name", "browser-resnet");
  await page.fill("#f-command", 'python3 train.py --epochs 3 --note "two words"');
  await page.fill("#f-gpus", "0");
  await page.click("#submit-button");
  const msg = await expectText(page.locator("#f-gpus-error"), /expected 1\.\.\d+, got 0/);
  assert.match(await page.locator("#submit-error").textContent(), /refused/);
  assert.ok(await page.locator('.field[data-field="gpus"].invalid').isVisible(), "gpus marked invalid: " + msg);
  await screenshot(page, "submit-error-1280");

  await page.fill("#f-gpus", "2");
  await page.fill("#f-max_gpus", "4");
  await page.click("#submit-button");
  await page.waitForURL(/#\/jobs\/\d+$/);
  jobId = Number(page.url().match(/#\/jobs\/(\d+)$/)[1]);
  await expectText(page.locator("#flash"), new RegExp(`Job ${jobId} submitted`));
  const stored = await call(server, "GET", "/jobs/" + jobId);
  assert.equal(stored.status, 200);
  assert.equal(stored.body.state, "PENDING");
  assert.deepEqual(stored.body.command, ["python3", "train.py", "--epochs", "3", "--note", "two words"]);
  assert.equal(stored.body.gpus, 2);
  assert.equal(stored.body.max_gpus, 4);
});

test("the jobs list shows the job as PENDING, filters and sorts", T, async () => {
  const other = await call(server, "POST", "/jobs", { name: "aaa-second", command: ["sleep", "1"], gpus: 1 });
  assert.equal(other.status, 201);
  await page.click('#nav a[data-nav="jobs"]');
  await page.waitForURL(/#\/jobs$/);
  const row = page.locator(`#jobs-table tr[data-job-id="${jobId}"]`);
  await expectText(row, /browser-resnet.*PENDING/);
  await expectText(page.locator("#jobs-count"), /^2 jobs/);
  await screenshot(page, "jobs-1280");

  await page.click('th button[data-sort="name"]');
  await expectText(page.locator("#jobs-table tbody tr").first(), /aaa-second/);
  await page.click('th button[data-sort="name"]');
  await expectText(page.locator("#jobs-table tbody tr").first(), /browser-resnet/);

  await page.selectOption("#filter-state", "CANCELLED");
  await expectText(page.locator("#view"), /No job matches these filters/);
  await page.selectOption("#filter-state", "PENDING");
  await expectText(row, /PENDING/);
  await page.fill("#filter-text", "resnet");
  await expectText(page.locator("#jobs-count"), /^1 of 2 jobs/);
  assert.match(page.url(), /state=PENDING/);
  await page.fill("#filter-text", "");
  await page.selectOption("#filter-state", "");
});

test("the job page cancels only after the confirmation and shows CANCELLED", T, async () => {
  await page.locator(`#jobs-table tr[data-job-id="${jobId}"] td.name a`).click();
  await page.waitForURL(new RegExp(`#/jobs/${jobId}$`));
  await expectText(page.locator("h1"), /browser-resnet\s*PENDING/);
  await expectText(page.locator("#sec-events"), /submit/);
  await expectText(page.locator("#sec-details"), /python3 train\.py --epochs 3 --note "two words"/);
  await expectText(page.locator("#sec-waiting"), /wait/i);
  await expectText(page.locator("#sec-loss"), /not available yet|No loss reported|loss/);
  await screenshot(page, "job-pending-1280");

  await page.click("#action-cancel");
  assert.ok(await page.locator("#confirm").isVisible());
  await expectText(page.locator("#confirm-text"), new RegExp(`Cancel job ${jobId}`));
  await page.click("#confirm-back");
  await expectText(page.locator("#action-result"), /not done/);
  assert.equal((await call(server, "GET", "/jobs/" + jobId)).body.state, "PENDING");

  await page.click("#action-cancel");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${jobId} cancelled: now CANCELLED`));
  await expectText(page.locator("h1"), /CANCELLED/);
  await expectText(page.locator("#sec-events"), /cancel/);
  assert.ok(await page.locator("#action-cancel").isDisabled());
  assert.equal((await call(server, "GET", "/jobs/" + jobId)).body.state, "CANCELLED");
  await screenshot(page, "job-cancelled-1280");
});

test("the cluster page shows a node registered through the API with its GPUs", T, async () => {
  const worker = await call(server, "POST", "/users", { name: "browser-worker", role: "worker" });
  assert.equal(worker.status, 201);
  const gib = 1024 ** 3;
  const node = await call(server, "POST", "/nodes", {
    name: "gpu-host-a", cpus: 32, memory_bytes: 256 * gib,
    gpus: [0, 1, 2, 3].map((i) => ({ index: i, model: "NVIDIA H100 80GB HBM3", memory_bytes: 80 * gib })),
  }, worker.body.token);
  assert.equal(node.status, 201, JSON.stringify(node.body));
  await page.click('#nav a[data-nav="cluster"]');
  await page.waitForURL(/#\/cluster$/);
  const card = page.locator('[data-node="gpu-host-a"]');
  await expectText(card, /gpu-host-a.*UP.*32 CPUs/s);
  assert.equal(await card.locator("li.gpu").count(), 4);
  await expectText(card.locator('li.gpu[data-gpu="3"]'), /GPU 3.*H100/);
  await expectText(page.locator("#stat-nodes"), /1 \/ 1/);
  // the live scheduler starts the waiting 1-GPU job as soon as the node registers
  await expectText(page.locator("#stat-queue"), /^0/);
  await page.waitForTimeout(3500); // one more poll: the charts need two samples
  await expectText(page.locator("#cluster-charts"), /GPUs allocated/);
  await screenshot(page, "cluster-1280");
});

test("the scheduler page says what is not available yet", T, async () => {
  await page.click('#nav a[data-nav="scheduler"]');
  await expectText(page.locator("#sched-policy"), /not available yet|active policy/i);
  await screenshot(page, "scheduler-1280");
});

test("at phone width the pages fit the screen", T, async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [hash, name, ready] of [["#/jobs", "jobs", "#jobs-table"], ["#/cluster", "cluster", '[data-node="gpu-host-a"]'],
    [`#/jobs/${jobId}`, "job", "#sec-events li"], ["#/submit", "submit", "#submit-form"]]) {
    await page.goto(server.url + "/" + hash);
    await page.locator(ready).first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${name} is ${overflow} px wider than the phone`);
    await screenshot(page, name + "-390");
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("a token the server refuses sends the browser back to the login page", T, async () => {
  await page.evaluate(() => localStorage.setItem("ringmaster.token", "revoked-token"));
  await page.goto(server.url + "/#/jobs");
  await page.waitForURL(/#\/login$/);
  await expectText(page.locator("#login-error"), /refused/i);
  assert.equal(await page.evaluate(() => localStorage.getItem("ringmaster.token")), null);
  // Signing in again returns to the page that asked.
  await page.fill("#token", server.token);
  await page.click("#login-form button[type=submit]");
  await page.waitForURL(/#\/jobs$/);
});

// The server does not serve metrics, fitted models, allocations or resize yet (issues 4
// and 5 add them). Until it does, this test answers those routes inside the browser, in
// the shapes those issues specify, to check that the job page and the GPU map draw them.
// When the worker and live scheduler land, the real flow replaces it.
test("sections light up when their endpoints answer (stubbed until the server has them)", T, async () => {
  const nodes = (await call(server, "GET", "/nodes")).body.items;
  // free the GPU the live scheduler gave the other job, so that only the stub holds GPUs
  for (const j of (await call(server, "GET", "/jobs?state=STARTING")).body.items)
    assert.equal((await call(server, "POST", `/jobs/${j.id}/cancel`)).status, 200);
  const real = (await call(server, "GET", "/jobs/" + jobId)).body;
  const running = { ...real, state: "RUNNING", finished_at: null, world_size: 2,
    allocation: [{ node: nodes[0].id, gpus: [1, 2] }],
    model: { convergence: { b0: 0.02, b1: 0.5, b2: 0.1, steps_remaining: 300, seconds_remaining: 140 },
      speed: { curve: [1, 2, 4].map((g) => ({ gpus: g, samples_per_second: 300 * g * (1 - 0.05 * Math.log2(g)) })) } } };
  const metrics = { items: Array.from({ length: 60 }, (_, k) => ({ step: k * 5, loss: 1 / (0.02 * k * 5 + 0.5) + 0.1,
    world_size: k < 30 ? 1 : 2, step_time_s: k < 30 ? 0.41 : 0.43, time: real.submitted_at })) };
  const json = (route, body, status = 200) => route.fulfill({ status, contentType: "application/json", body: JSON.stringify(body) });
  let resized = null;
  await page.route(new RegExp(`/api/v1/jobs/${jobId}$`), (r) => json(r, running));
  await page.route(new RegExp(`/api/v1/jobs/${jobId}/metrics$`), (r) => json(r, metrics));
  await page.route(new RegExp(`/api/v1/jobs/${jobId}/model$`), (r) => json(r, running.model));
  await page.route(new RegExp(`/api/v1/jobs/${jobId}/resize$`), (r) => {
    if (r.request().method() !== "POST") return json(r, { status: 405, title: "Method Not Allowed" }, 405);
    resized = r.request().postDataJSON();
    return json(r, { ...running, state: "RESIZING" });
  });
  await page.route(/\/api\/v1\/jobs\?state=RUNNING/, (r) => json(r, { items: [running], next: null }));
  try {
    await page.goto(server.url + "/#/jobs/" + jobId);
    await page.reload(); // a fresh page asks again for the routes it found missing
    await expectText(page.locator("h1"), /RUNNING/);
    await page.locator("#sec-loss svg path.series.s0").waitFor();
    assert.equal(await page.locator("#sec-loss path.fit").count(), 1, "the fitted curve is drawn");
    await expectText(page.locator("#sec-loss"), /steps remaining\s*300/);
    await page.locator("#sec-speed svg circle.dot").first().waitFor();
    assert.equal(await page.locator("#sec-speed circle.dot").count(), 2, "measured at 1 and 2 GPUs");
    await expectText(page.locator("#sec-details"), new RegExp(`node ${nodes[0].id}: GPU 1, 2`));
    await screenshot(page, "job-running-stubbed-1280");

    await page.click("#action-resize");
    await page.fill("#confirm-input", "4");
    await page.click("#confirm-ok");
    await expectText(page.locator("#action-result"), new RegExp(`Job ${jobId} resize requested: now RESIZING`));
    assert.deepEqual(resized, { gpus: 4 });

    await page.click('#nav a[data-nav="cluster"]');
    const busy = page.locator('[data-node="gpu-host-a"] li.gpu.busy');
    await expectText(busy.first(), new RegExp(`#${jobId}`));
    assert.equal(await busy.count(), 2);
    await expectText(page.locator("#stat-gpus"), /^2 \/ 4/);
    await screenshot(page, "cluster-allocated-stubbed-1280");
  } finally {
    await page.unrouteAll({ behavior: "ignoreErrors" });
  }
});

// The pure helpers, run in the page itself (the modules are what the server ships).
test("helpers: argv splitting, field mapping, ticks, fits, throughput, GPU owners", T, async () => {
  const got = await page.evaluate(async () => {
    const submit = await import("/js/pages/submit.js");
    const chart = await import("/js/chart.js");
    const parts = await import("/js/pages/jobparts.js");
    const cluster = await import("/js/pages/cluster.js");
    let unclosed = null;
    try { submit.splitArgs('echo "open'); } catch (e) { unclosed = [e.field, e.message]; }
    const fit = parts.convergence({ convergence: { b0: 1, b1: 2, b2: 0.5 } });
    const owners = cluster.gpuOwners([
      { id: 7, state: "RUNNING", allocation: [{ node: 1, gpus: [0, 1] }] },
      { id: 8, state: "SUSPENDED", allocation: [{ node: 1, gpus: [1] }] },
    ]);
    return {
      argv: submit.splitArgs(`python3  train.py --name 'a b' --x "c \\"d\\"" e\\ f ''`),
      unclosed,
      fields: ["command[2]", "env.PATH", "gpus", "Idempotency-Key"].map(submit.inputFor),
      ticks: chart.ticks(0, 1, 4),
      fitAt: [fit.at(0), fit.at(2)],
      noFit: parts.convergence({ convergence: { b0: 1 } }),
      tput: parts.measuredThroughput({ items: [
        { world_size: 1, step_time_s: 0.5 }, { world_size: 1, step_time_s: 0.5 },
        { world_size: 2, step_time_s: 0.25 }, { world_size: 0, step_time_s: 1 } ] }, 100),
      gpu0: owners.get("1/0").jobs.map((j) => j.id),
      gpu1: [owners.get("1/1").jobs.map((j) => j.id), owners.get("1/1").packed, owners.get("1/1").suspended],
    };
  });
  assert.deepEqual(got.argv, ["python3", "train.py", "--name", "a b", "--x", 'c "d"', "e f", ""]);
  assert.deepEqual(got.unclosed, ["command", 'a " quote is not closed']);
  assert.deepEqual(got.fields, ["command", "env", "gpus", null]);
  assert.deepEqual(got.ticks, [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(got.fitAt, [1, 0.75]);
  assert.equal(got.noFit, null);
  assert.deepEqual(got.tput, [[1, 200], [2, 800]]);
  assert.deepEqual(got.gpu0, [7]);
  assert.deepEqual(got.gpu1, [[7, 8], true, true]);
});

test("no script errors in the browser console", T, async () => {
  // The browser logs every non-2xx answer (the 400 and 401 above are expected); only
  // script errors and other console errors count.
  const real = consoleErrors.filter((m) => !/^Failed to load resource: the server responded with a status of (400|401|404|405)/.test(m));
  assert.deepEqual(real, []);
});

test("when the server goes away the page says so and keeps what it showed", T, async () => {
  await page.goto(server.url + "/#/jobs");
  await page.locator(`#jobs-table tr[data-job-id="${jobId}"]`).waitFor();
  await server.stop();
  await expectText(page.locator("#health"), /unreachable/, 15000);
  await expectText(page.locator("#view"), /Cannot refresh \(showing the last list\): cannot reach the server/, 15000);
  assert.ok(await page.locator(`#jobs-table tr[data-job-id="${jobId}"]`).isVisible());
  await screenshot(page, "jobs-server-down-1280");
});
