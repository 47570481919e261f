// The dashboard in a real browser against a real ringmasterd, its live scheduler and a real
// ringmaster-worker (four simulated GPUs, real mpirun jobs): sign in, submit through the form
// (after the API's validation error for a bad value), see the job PENDING in the list and
// why it waits, cancel it from its page behind the confirmation; switch the policy on the
// scheduler page and see its rounds; see the worker's node on the cluster map; run an
// elastic train-mlp job and follow it (loss chart from its metrics and the scheduler's fit,
// allocation, resize, events, log, suspend, resume, cancel); screenshots of each page at
// 1,280 px and at phone width; a second worker, and a job migrated to it from its page; the
// cluster's history charts from the server's samples, polled with If-None-Match; the what-if
// page replaying two completed train-mlp jobs under the policies (ringmasterd runs the real
// ringmaster-sim). Nothing is stubbed: every answer comes from the server.
//
// The tests run in order and share one server, one browser, one worker and their jobs.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { startServer, startBrowser, startWorker, stopAll, call, screenshot, sanitizerReports, TRAIN_MLP } from "./harness.mjs";

const T = { timeout: 60000 };
let server, page, worker, workerB, jobId, otherId, mlpId, consoleErrors = [];
const responses = []; // [status, path] of every API answer the page got

const suiteStart = Date.now();

before(async () => {
  server = await startServer();
  ({ page } = await startBrowser());
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("response", (r) => { if (r.url().includes("/api/v1/")) responses.push([r.status(), new URL(r.url()).pathname]); });
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

// The series a line chart (figure.chart) holds, as dygraphs drew them: [{label, points (its
// non-null values), dots, step, dashed}]; [] until the chart is drawn.
async function chartSeries(fig) {
  return fig.evaluate((f) => {
    const g = f.graph;
    if (!g) return [];
    return g.getLabels().slice(1).map((label, i) => {
      let points = 0;
      for (let r = 0; r < g.numRows(); r++) if (g.getValue(r, i + 1) !== null) points++;
      return { label, points, dots: !!g.getOption("drawPoints", label), step: !!g.getOption("stepPlot", label),
        dashed: (g.getOption("strokePattern", label) || []).length > 0 };
    });
  }, null, { timeout: 2000 }).catch(() => []);
}

// Waits until fig's chart is drawn by dygraphs: its canvas, its axis labels and x label.
async function drawnByDygraphs(fig, xLabel, timeout = 20000) {
  const look = () => fig.evaluate((f) => ({
    graph: !!f.graph, canvas: f.querySelectorAll(".plot canvas").length,
    xTicks: f.querySelectorAll(".dygraph-axis-label-x").length, yTicks: f.querySelectorAll(".dygraph-axis-label-y").length,
    xLabel: (f.querySelector(".dygraph-xlabel") || {}).textContent,
  }), null, { timeout: 2000 }).catch(() => null);
  let seen = null;
  for (const deadline = Date.now() + timeout; Date.now() < deadline; await page.waitForTimeout(200)) {
    seen = await look();
    if (seen && seen.graph && seen.canvas > 0 && seen.xTicks >= 2 && seen.yTicks >= 2 && xLabel.test(seen.xLabel || "")) return;
  }
  assert.fail("not drawn by dygraphs: " + JSON.stringify(seen));
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
  otherId = other.body.id;
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
  // the live scheduler's explanation: no node is up yet
  await expectText(page.locator("#sec-waiting"), /queue position\s*1 \(next\).*reason\s*needs 2 GPUs, no node is up/s);
  await expectText(page.locator("#sec-loss"), /No loss reported yet/);
  await expectText(page.locator("#sec-log"), /The log is empty/);
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

// A job after another: its page names the job it runs after and why it waits, and its deadline
// with the verdict on the forecast; the first cancelled, the scheduler cancels it and its events
// say why.
test("the job page shows what a job runs after and why it waits for it", T, async () => {
  const first = await call(server, "POST", "/jobs", { name: "browser-prep", command: ["true"], gpus: 1 });
  assert.equal(first.status, 201);
  const a = first.body.id;
  const second = await call(server, "POST", "/jobs", { name: "browser-train", command: ["true"], gpus: 1, after: [{ job: a }], deadline: "2099-12-05T18:00:00Z" });
  assert.equal(second.status, 201);
  assert.match(second.body.deadline_forecast.text, /forecast/, "the answer's verdict on its deadline");
  const b = second.body.id;
  await page.goto(server.url + "/#/jobs/" + b);
  await expectText(page.locator("#sec-details"), new RegExp(`runs after\\s*job ${a} \\(ok\\)`));
  await expectText(page.locator("#deadline"), /2099.*forecast/);
  await expectText(page.locator("#sec-waiting"), new RegExp(`reason\\s*waiting for job ${a}, PENDING`));
  assert.equal(await page.locator("#job-after a").getAttribute("href"), "#/jobs/" + a);
  assert.equal((await call(server, "POST", "/jobs/" + a + "/cancel")).status, 200);
  await expectText(page.locator("h1"), /CANCELLED/);
  await expectText(page.locator("#sec-events"), new RegExp(`dependency on job ${a} can no longer be met: it CANCELLED`));
});

test("the scheduler page shows the live policy and its rounds; the admin switches to fifo", T, async () => {
  await page.click('#nav a[data-nav="scheduler"]');
  await page.waitForURL(/#\/scheduler$/);
  await expectText(page.locator("#sched-policy"), /active policy\s*ringmaster/);
  await expectText(page.locator("#sched-policy"), /round every\s*10 s/);
  await expectText(page.locator("#sched-policy"), /exploring stage \(per GPU count\)\s*2 min 30 s/);
  // the submissions above woke the scheduler: its rounds are listed, newest first
  await page.locator("#rounds-table tbody tr").first().waitFor();
  const first = Number(await page.locator("#rounds-table tbody tr").first().getAttribute("data-round"));
  const rounds = (await call(server, "GET", "/scheduler/rounds?limit=1")).body.items;
  assert.ok(first >= 1 && first <= rounds[0].id, `round ${first} shown, ${rounds[0].id} the newest`);
  await expectText(page.locator("#rounds-table tbody tr").first(), /ringmaster\s*[\d.]+ ms/);
  assert.equal(await page.locator("#policy-select option").count(), (await call(server, "GET", "/scheduler")).body.policies.length);
  // fifo gives a job the GPUs it asks for, so the resize below is carried out at once
  await page.selectOption("#policy-select", "fifo");
  await page.click("#policy-form button[type=submit]");
  await expectText(page.locator("#sched-result"), /Policy switched to fifo/);
  await expectText(page.locator("#policy-name"), /^fifo$/);
  assert.equal((await call(server, "GET", "/scheduler")).body.policy, "fifo");
  await expectText(page.locator("#rounds-table tbody tr").first(), /fifo/, 20000);
  // the longest wait, the cluster's record of estimates, and each user against its share
  await expectText(page.locator("#sched-policy"), /longest wait \(every policy\)\s*1 h/);
  await expectText(page.locator("#sched-estimates"), /No completed job has a recorded estimate yet/);
  assert.equal((await call(server, "PATCH", "/users/admin", { share: 2, max_gpus: 3 })).status, 200);
  await expectText(page.locator('#users-table tr[data-user="admin"]'), /admin\s*2\s*3/, 20000);
  assert.equal((await call(server, "PATCH", "/users/admin", { share: 1, max_gpus: null })).status, 200);
  await screenshot(page, "scheduler-1280");
});

test("a real worker registers its four simulated GPUs and the cluster page shows them", T, async () => {
  // nothing else may take the worker's GPUs: the second job of the list test goes
  assert.equal((await call(server, "POST", `/jobs/${otherId}/cancel`)).status, 200);
  // rounds every second and no resize hysteresis: the model fits and resizes come quickly
  const put = await call(server, "PUT", "/scheduler", { interval_s: 1, min_resize_interval_s: 0, resize_cost_s: 0 });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  worker = await startWorker(server, "sim-a", 4, "2x2");
  await page.click('#nav a[data-nav="cluster"]');
  await page.waitForURL(/#\/cluster$/);
  const card = page.locator('[data-node="sim-a"]');
  await expectText(card, /sim-a.*UP.*simulated/s);
  assert.equal(await card.locator("li.gpu").count(), 4);
  await expectText(card.locator('li.gpu[data-gpu="3"]'), /GPU 3.*simulated.*free/);
  // its two NVLink islands of two (--simulate-topology 2x2) are drawn as two boxes
  assert.equal(await card.locator(".island").count(), 2);
  await expectText(card.locator('.island[data-island="1"]'), /NVLink island 1.*GPU 2.*GPU 3/s);
  assert.equal(await card.locator('.island[data-island="0"] li.gpu').count(), 2);
  // an operator's drain of GPU 2 shows on the card and on its tile, and goes with the undrain
  const nodeId = await card.getAttribute("data-node-id");
  const dr = await call(server, "POST", `/nodes/${nodeId}/drain`, { reason: "fan check", gpus: [2] });
  assert.equal(dr.status, 200, JSON.stringify(dr.body));
  await expectText(card.locator(".badge.drained"), /drained/, 20000);
  await expectText(card.locator(".drain-reason"), /Drained \(GPUs 2\): fan check/);
  await expectText(card.locator('li.gpu.drained[data-gpu="2"]'), /GPU 2.*drained/);
  assert.equal(await card.locator("li.gpu.drained").count(), 1);
  assert.equal((await call(server, "POST", `/nodes/${nodeId}/undrain`)).status, 200);
  await page.waitForFunction(() => !document.querySelector('[data-node="sim-a"] .badge.drained'), null, { timeout: 20000 });
  // an admin's labels show on the card
  assert.equal((await call(server, "PATCH", `/nodes/${nodeId}`, { labels: { switch: "s1", rack: "r7" } })).status, 200);
  await expectText(card.locator(".node-labels"), /rack=r7.*switch=s1|switch=s1.*rack=r7/, 20000);
  assert.equal((await call(server, "PATCH", `/nodes/${nodeId}`, { labels: { switch: null, rack: null } })).status, 200);
  await page.waitForFunction(() => !document.querySelector('[data-node="sim-a"] .node-labels'), null, { timeout: 20000 });
  // a GPU's fault (what a worker reports) marks its tile and the card, and goes when cleared
  assert.equal((await call(server, "POST", `/nodes/${nodeId}/health`, { gpus: [{ index: 1, fault: "xid 79" }] })).status, 200);
  await expectText(card.locator('li.gpu.faulty[data-gpu="1"]'), /GPU 1.*fault: xid 79/s, 20000);
  await expectText(card.locator(".badge.faulty"), /1 GPU fault/);
  assert.equal((await call(server, "POST", `/nodes/${nodeId}/health`, { gpus: [] })).status, 200);
  await page.waitForFunction(() => !document.querySelector('[data-node="sim-a"] li.gpu.faulty'), null, { timeout: 20000 });
  await expectText(page.locator("#stat-nodes"), /1 \/ 1/);
  await expectText(page.locator("#stat-gpus"), /^0 \/ 4/);
  await expectText(page.locator("#policy"), /Active policy: fifo/);
  await expectText(page.locator("#stat-queue"), /^0/);
  await expectText(page.locator("#cluster-queue"), /Nothing waits/);
  await expectText(page.locator("#calibration-table"), /truth ≤ P90.*made 1-4h ahead.*start.*finish/s);
  await expectText(page.locator("#cluster-charts"), /GPUs allocated/, 10000); // after two samples
  await screenshot(page, "cluster-1280");
});

// The real flow: a train-mlp job through mpirun on the worker, its loss reported through
// libringjob. Long enough never to finish during the test (it is cancelled at the end).
test("an elastic train-mlp job runs for real: loss, fit, allocation, resize, log, suspend, resume, cancel", { timeout: 150000 }, async () => {
  await page.click('#nav a[data-nav="submit"]');
  await page.fill("#f-name", "browser-mlp");
  await page.fill("#f-command", `${TRAIN_MLP} --steps 2000000 --params 50000 --print-every 50 --report-total`);
  await page.fill("#f-gpus", "2");
  await page.fill("#f-min_gpus", "1");
  await page.fill("#f-max_gpus", "4");
  await page.check("#f-elastic");
  // the ranks of an ASan build of train-mlp need these (OpenMPI's own allocations)
  await page.fill("#f-env", "ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0");
  await page.click("#submit-button");
  await page.waitForURL(/#\/jobs\/\d+$/);
  mlpId = Number(page.url().match(/#\/jobs\/(\d+)$/)[1]);
  const job = (id = mlpId) => call(server, "GET", "/jobs/" + id).then((r) => r.body);
  assert.equal((await job()).elastic, true);

  await expectText(page.locator("h1"), /browser-mlp\s*RUNNING/, 40000);
  const node = (await call(server, "GET", "/nodes")).body.items.find((n) => n.name === "sim-a");
  await expectText(page.locator("#sec-details"), new RegExp(`allocation\\s*node ${node.id}: GPU 0, 1(?!,)`));
  await expectText(page.locator("#sec-events"), /start.*by scheduler/s);

  // the loss chart, drawn by dygraphs: real points from GET /jobs/{id}/metrics, then the
  // scheduler's fit over them (a dashed curve)
  const lossChart = page.locator("#sec-loss figure.chart");
  await drawnByDygraphs(lossChart, /^step$/, 40000);
  const lossSeries = async (label) => (await chartSeries(lossChart)).find((se) => label.test(se.label));
  const points = async () => ((await lossSeries(/^loss \(reported\)$/)) || { points: 0 }).points;
  for (const deadline = Date.now() + 40000; (await points()) < 60 && Date.now() < deadline;) await page.waitForTimeout(300);
  assert.ok((await points()) >= 60, `the loss line has ${await points()} points`);
  for (const deadline = Date.now() + 30000; !(await lossSeries(/^fitted/)) && Date.now() < deadline;) await page.waitForTimeout(300);
  const fitted = await lossSeries(/^fitted/);
  assert.ok(fitted && fitted.points > 10 && fitted.dashed, "the fitted curve: " + JSON.stringify(fitted));
  await expectText(page.locator("#sec-loss"), /steps remaining\s*[\d,]+/);
  // one truth about remaining work (issue 31): the steps, epochs and time the scheduler plans
  // with, from its declared (here reported) length, never 0, with their source; the fit beside
  await expectText(page.locator("#sec-details"), /steps remaining\s*[1-9][\d,]*/, 20000);
  // and the step the round counted them from, beside the progress bar's latest step
  await expectText(page.locator("#sec-details"), /steps remaining\s*[1-9][\d,]* \(counted at step [1-9][\d,]*\)/);
  await expectText(page.locator("#sec-details"), /epochs\s*[\d.]+ done, [\d.]*[1-9][\d.]* to go/);
  await expectText(page.locator("#sec-details"), /remaining from\s*declared/);
  await expectText(page.locator("#sec-loss"), /steps remaining\s*[1-9][\d,]*.*remaining from\s*declared/s);
  await expectText(page.locator("#sec-loss"), /fit says\s*.*(evidence, not the estimate|the estimate)/);
  const api = (await job()).model;
  assert.ok(api.remaining_source === "declared" && api.remaining_steps > 0, JSON.stringify(api.remaining));
  // no raw JSON in the page: the model's fields are labelled rows
  const shown = await page.locator("#view").innerText();
  assert.ok(!shown.includes('{"'), "raw JSON on the job page: " + shown.slice(Math.max(0, shown.indexOf('{"') - 80), shown.indexOf('{"') + 80));
  const metrics = (await call(server, "GET", `/jobs/${mlpId}/metrics`)).body.items;
  assert.ok(metrics.length >= 60 && metrics.every((m) => m.world_size === 2), `${metrics.length} points at 2 GPUs`);
  await expectText(page.locator("#sec-loss"), /points\s*[\d,]+ reported/);
  await expectText(page.locator("#sec-alloc .alloc-row"), /2 GPUs/);
  await expectText(page.locator("#sec-log"), /train-mlp: .*world size 2/);
  await expectText(page.locator("#sec-log"), /step \d+ loss [\d.]+ world 2/);
  // its length, reported through libringjob (--report-total): a progress bar with the figures
  await expectText(page.locator("#sec-details"), /progress\s*[\d.]+% · [\d,]+ of 2,000,000 steps/);
  const bar = page.locator("#sec-details .progress progress");
  assert.equal(await bar.getAttribute("max"), "2000000");
  // the job object and the loss points come from two requests of one refresh: the bar may
  // show the step of a moment before the 60th point, and catches up at the next refresh
  const barValue = () => bar.evaluate((el) => el.value).then(Number);
  for (const deadline = Date.now() + 20000; (await barValue()) < 60 && Date.now() < deadline;) await page.waitForTimeout(300);
  assert.ok((await barValue()) >= 60, `the bar's value is the steps done: ${await barValue()}`);
  await screenshot(page, "job-running-1280");

  // the GPU map colours the job's two GPUs
  await page.click('#nav a[data-nav="cluster"]');
  const busy = page.locator('[data-node="sim-a"] li.gpu.busy');
  await expectText(busy.first(), new RegExp(`#${mlpId} browser-mlp`));
  assert.equal(await busy.count(), 2);
  await expectText(page.locator("#stat-gpus"), /^2 \/ 4/);
  await expectText(page.locator("#map-legend"), new RegExp(`#${mlpId} browser-mlp · RUNNING`));

  // resize to 4 from the job page: the request, then the round's resize carried out by the worker
  await page.goto(server.url + "/#/jobs/" + mlpId);
  await page.click("#action-resize");
  await page.fill("#confirm-input", "4");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${mlpId} resize requested: now \\w+, 4 GPUs requested`));
  await expectText(page.locator("#sec-events"), /resize-request.*requested GPUs 2 -> 4/s);
  await expectText(page.locator("#sec-details"), new RegExp(`allocation\\s*node ${node.id}: GPU 0, 1, 2, 3`), 40000);
  await expectText(page.locator("h1"), /RUNNING/, 20000);
  await expectText(page.locator("#sec-events"), /RESIZING.*resize.*2 -> 4 GPUs/s);
  await expectText(page.locator("#sec-log"), /world size 4/, 30000);
  await expectText(page.locator("#sec-alloc"), /2 GPUs.*4 GPUs/s, 20000);
  // throughput measured at two GPU counts, and the speed model fitted from them
  const speedChart = page.locator("#sec-speed figure.chart");
  const speedSeries = async (label) => (await chartSeries(speedChart)).find((se) => se.label === label) || { points: 0 };
  for (const deadline = Date.now() + 30000; (await speedSeries("measured")).points < 2 && Date.now() < deadline;)
    await page.waitForTimeout(300);
  const measured = await speedSeries("measured");
  assert.ok(measured.points === 2 && measured.dots, "measured at 2 and 4 GPUs, drawn as dots: " + JSON.stringify(measured));
  await drawnByDygraphs(speedChart, /^GPUs$/);
  for (const deadline = Date.now() + 30000; (await speedSeries("speed model (fitted)")).points === 0 && Date.now() < deadline;)
    await page.waitForTimeout(300);
  assert.ok((await speedSeries("speed model (fitted)")).dashed, "the speed model, dashed");
  // its speed on each GPU type of the cluster (here the workers' one, "simulated"), a table
  // that says where each figure comes from
  await expectText(page.locator("#sec-speed #types-table"), /simulated.*\d s.*(measured|estimated|one factor)/s, 30000);
  await screenshot(page, "job-resized-1280");

  // the jobs table: the predicted finish comes with the list (predicted_finish), so it shows
  // while no job's model can be fetched; a dash for the ended jobs
  const MODEL_URL = /\/api\/v1\/jobs\/\d+\/model/;
  await page.route(MODEL_URL, (route) => route.fulfill({ status: 404, contentType: "application/problem+json",
    body: JSON.stringify({ title: "Not Found", status: 404, detail: "no model (the test hides them)" }) }));
  await page.click('#nav a[data-nav="jobs"]');
  const finish = page.locator(`#jobs-table tr[data-job-id="${mlpId}"] td.finish`);
  // (a job of 2,000,000 steps: at 100,000,000 a slow host put its finish past the forecast's
  // 7-day horizon, where the forecast says null, and the table showed a dash; 2026-12-08)
  const tFinish = Date.now();
  await expectText(finish, /\d{1,2}[:.]\d{2}/, 30000);
  console.log("browser: the predicted finish shown after " + (Date.now() - tFinish) + " ms");
  await expectText(page.locator(`#jobs-table tr[data-job-id="${mlpId}"] .progress`), /[\d.]+% · [\d,]+ of 2,000,000 steps/);
  assert.equal(await page.locator(`#jobs-table tr[data-job-id="${jobId}"] .progress`).count(), 0, "no length, no bar");
  assert.equal((await page.locator(`#jobs-table tr[data-job-id="${jobId}"] td.finish`).textContent()).trim(), "—");
  await page.unroute(MODEL_URL);
  await screenshot(page, "jobs-predicted-finish-1280");

  await page.click('#nav a[data-nav="cluster"]');
  await expectText(page.locator("#stat-gpus"), /^4 \/ 4/);
  assert.equal(await page.locator('[data-node="sim-a"] li.gpu.busy').count(), 4);
  await screenshot(page, "cluster-running-1280");

  // suspend and resume, each behind its confirmation; once its growth to 4 GPUs has run (the
  // 4 GPUs above are allocated from the round's decision on, while it may still be RESIZING,
  // and Suspend is offered to a RUNNING job only)
  for (const end = Date.now() + 30000; (await job()).state !== "RUNNING" && Date.now() < end;)
    await new Promise((r) => setTimeout(r, 200));
  await page.goto(server.url + "/#/jobs/" + mlpId);
  await expectText(page.locator("h1"), /browser-mlp\s*RUNNING/, 30000);
  await page.click("#action-suspend");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${mlpId} suspension requested: suspend action \\d+ sent to node ${node.id}`));
  await expectText(page.locator("h1"), /SUSPENDED/, 30000);
  assert.equal((await job()).state, "SUSPENDED");
  await page.click("#action-resume");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${mlpId} resume requested: resume action \\d+`));
  await expectText(page.locator("h1"), /RUNNING/, 30000);
  await expectText(page.locator("#sec-events"), /SUSPENDED.*RUNNING/s);

  // cancel: the worker stops the ranks and the GPUs come free
  await page.click("#action-cancel");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${mlpId} cancelled`));
  await expectText(page.locator("h1"), /CANCELLED/, 30000);
  assert.equal((await job()).state, "CANCELLED");
  await page.click('#nav a[data-nav="cluster"]');
  await expectText(page.locator("#stat-gpus"), /^0 \/ 4/, 20000);
});

// Migration from the job page between two real workers: the dialog offers only the other
// node, and the job ends up running there (checkpoint, stop, restore).
test("the job page migrates a running job to the other worker", { timeout: 180000 }, async () => {
  workerB = await startWorker(server, "sim-b", 2);
  const nodes = (await call(server, "GET", "/nodes")).body.items;
  const idOf = (name) => nodes.find((n) => n.name === name).id;
  const sub = await call(server, "POST", "/jobs", { name: "browser-move", gpus: 2,
    command: [TRAIN_MLP, "--steps", "100000000", "--params", "20000", "--print-every", "50"],
    env: { ASAN_OPTIONS: "detect_leaks=0:protect_shadow_gap=0" } });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  const id = sub.body.id;
  await page.goto(server.url + "/#/jobs/" + id);
  await expectText(page.locator("h1"), /browser-move\s*RUNNING/, 60000);
  const before = (await call(server, "GET", "/jobs/" + id)).body.allocation[0].node;
  const target = before === idOf("sim-a") ? "sim-b" : "sim-a";
  await expectText(page.locator("#sec-log"), /step \d+ loss/, 30000);

  await page.click("#action-migrate");
  // the dialog opens once the page has fetched the nodes
  await page.locator("#confirm select#confirm-input").waitFor({ timeout: 10000 });
  const options = await page.locator("#confirm-input option").allTextContents();
  assert.deepEqual(options.map((o) => o.split(" (")[0]), ["any other node", target], "only the other node is offered");
  await page.selectOption("#confirm-input", String(idOf(target)));
  await screenshot(page, "job-migrate-dialog-1280");
  await page.click("#confirm-ok");
  await expectText(page.locator("#action-result"), new RegExp(`Job ${id} migration requested`));
  await expectText(page.locator("#sec-events"), /migrate-request/);
  const tMove = Date.now();
  await expectText(page.locator("#sec-details"), new RegExp(`allocation\\s*node ${idOf(target)}: GPU \\d+, \\d+(?!,)`), 90000);
  console.log("browser: the migration shown after " + (Date.now() - tMove) + " ms");
  await expectText(page.locator("h1"), /RUNNING/, 60000);
  await expectText(page.locator("#sec-events"), /MIGRATING/);
  await expectText(page.locator("#sec-log"), /restored step/, 60000);
  await screenshot(page, "job-migrated-1280");

  // with both nodes holding nothing else, a one-node cluster would have nowhere to go:
  // the dialog says so instead of sending the request (checked with sim-b's GPUs only)
  const migrate = await page.evaluate(async ([job, ns]) => (await import("/js/pages/job.js")).migrateTargets(job, ns),
    [{ allocation: [{ node: idOf(target), gpus: [0, 1] }] }, nodes.filter((n) => n.name === target)]);
  assert.match(migrate.none, /No other node is up/);

  await page.click("#action-cancel");
  await page.click("#confirm-ok");
  await expectText(page.locator("h1"), /CANCELLED/, 30000);
});

// The history the server samples: GPUs allocated and busy, the queue and its waits, drawn on
// the cluster page; its polling answers 304 while nothing new was sampled.
test("the cluster page draws the server's history and polls it with If-None-Match", { timeout: 90000 }, async () => {
  const hist = (await call(server, "GET", "/cluster/history")).body;
  assert.ok(hist.items.length >= 4, `${hist.items.length} samples`);
  assert.ok(hist.items.some((r) => r.gpus_allocated >= 4 && r.gpus_busy >= 4), "the resized job kept 4 GPUs busy");
  assert.ok(hist.items.some((r) => r.gpus_total === 6), "both workers' GPUs counted");
  assert.ok(hist.items.every((r) => r.gpus_busy <= r.gpus_allocated && r.gpus_allocated <= r.gpus_total));
  await page.goto(server.url + "/#/cluster");
  await page.selectOption("#history-range", "1h");
  for (const id of ["chart-gpus", "chart-queue", "chart-wait"])
    await drawnByDygraphs(page.locator("#" + id), /^minutes ago$/);
  const gpus = page.locator("#chart-gpus");
  const drawn = await chartSeries(gpus);
  assert.deepEqual(drawn.map((se) => se.label), ["GPUs allocated", "GPUs busy (a minibatch lately)", "GPUs up"]);
  assert.ok(drawn.every((se) => se.step), "GPU counts drawn as steps");
  const points = drawn.reduce((n, se) => n + se.points, 0);
  assert.ok(points >= 3 * hist.items.length, `${points} points drawn for ${hist.items.length} samples`);
  assert.equal(points, Number(await gpus.getAttribute("data-points")), "every point given is drawn");
  assert.ok(drawn[1].points > 3, "the busy line has points: " + drawn[1].points);
  await expectText(page.locator("#chart-gpus figcaption"), /GPUs allocated.*GPUs busy.*GPUs up/);
  await hoverShowsValues(gpus);
  await zoomAndReset(gpus);
  await screenshot(page, "cluster-history-1280");
  // polls of the same history and job lists are answered 304 while nothing changes
  const seen304 = () => responses.filter(([st, p]) => st === 304 && /\/api\/v1\/(cluster\/history|jobs|nodes)$/.test(p)).length;
  for (const deadline = Date.now() + 30000; seen304() === 0 && Date.now() < deadline;) await page.waitForTimeout(500);
  assert.ok(seen304() > 0, "some poll was answered 304");
  const counts = await page.evaluate(async () => (await import("/js/api.js")).conditional);
  assert.ok(counts.notModified > 0 && counts.sent >= counts.notModified, JSON.stringify(counts));
  await page.selectOption("#history-range", "15m");
  await drawnByDygraphs(page.locator("#chart-gpus"), /^minutes ago$/);
});

// The What-if bar chart (fig) is drawn by dygraphs with a row per policy (names, in order),
// its x axis naming them; our plotter filled the bars (the canvas holds the bar colour in the
// middle of the first policy's mean bar, and nothing at the same spot above the tallest bar);
// the measured mean is a dashed rule (the underlay); hovering a policy's bars says its mean
// and p99 JCT and marks the one in force.
async function whatifBars(fig, names) {
  await drawnBarChart(fig, names.length);
  const got = await fig.evaluate((f) => {
    const g = f.graph, canvas = f.querySelector(".plot canvas"), r = window.devicePixelRatio || 1;
    const ctx = canvas.getContext("2d");
    const [x, yTop] = g.toDomCoords(0, g.getValue(0, 1));
    const [, yBase] = g.toDomCoords(0, 0);
    const group = Math.min(Math.abs(g.toDomXCoord(1) - g.toDomXCoord(0)) * 0.7, 120);
    const at = (px, py) => Array.from(ctx.getImageData(Math.round(px * r), Math.round(py * r), 1, 1).data);
    const box = canvas.getBoundingClientRect();
    return { labels: g.getLabels(), rows: g.numRows(), ticks: [...f.querySelectorAll(".dygraph-axis-label-x")].map((e) => e.textContent),
      inBar: at(x - group / 4, (yTop + yBase) / 2), above: at(x - group / 4, g.getArea().y + 2),
      hover: { x: box.left + x - group / 4, y: box.top + (yTop + yBase) / 2 }, legend: f.querySelector("figcaption").textContent };
  });
  assert.deepEqual(got.labels, ["x", "mean JCT", "p99 JCT"]);
  assert.equal(got.rows, names.length);
  assert.deepEqual(got.ticks, names, "the x axis names the policies");
  const blue = [0x8e, 0xa6, 0xf0, 255], green = [0x4f, 0x9a, 0x68, 255]; // chart.js: mean, best mean
  assert.ok([blue, green].some((c) => c.join() === got.inBar.join()), "the mean bar filled: " + got.inBar);
  assert.ok(got.above[3] === 0 || got.above.slice(0, 3).every((v) => v > 200), "nothing drawn above the bars: " + got.above);
  assert.match(got.legend, /mean JCT.*p99 JCT.*in force.*measured mean JCT/);
  await page.mouse.move(got.hover.x - 30, got.hover.y + 10);
  await page.mouse.move(got.hover.x, got.hover.y, { steps: 4 });
  await expectText(fig.locator(".chart-hover"), new RegExp(`^${names[0]}: mean JCT \\d+ s, \\d+\\.\\d\\d× the measured, p99 JCT \\d+ s`));
  assert.match(await fig.locator(".plot").getAttribute("aria-label"), /ringmaster: mean JCT \d+ s.*\(in force\)/);
}

// Waits until the bar chart fig is drawn by dygraphs with n categories.
async function drawnBarChart(fig, n, timeout = 20000) {
  let seen = null;
  for (const deadline = Date.now() + timeout; Date.now() < deadline; await page.waitForTimeout(200)) {
    seen = await fig.evaluate((f) => ({ graph: !!f.graph, rows: f.graph ? f.graph.numRows() : 0,
      canvas: f.querySelectorAll(".plot canvas").length, yTicks: f.querySelectorAll(".dygraph-axis-label-y").length }),
    null, { timeout: 2000 }).catch(() => null);
    if (seen && seen.graph && seen.rows === n && seen.canvas > 0 && seen.yTicks >= 2) return;
  }
  assert.fail("the bar chart is not drawn by dygraphs: " + JSON.stringify(seen));
}

// Hovering the newest sample's point of "GPUs up" highlights that row, and the hover line
// says its values, as the chart holds them. (The chart is redrawn when a sample arrives: try
// again then.)
async function hoverShowsValues(fig) {
  let last = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const t = await fig.evaluate((f) => {
      const g = f.graph, r = g.numRows() - 1;
      const [x, y] = g.toDomCoords(g.getValue(r, 0), g.getValue(r, 3));
      const box = f.querySelector(".plot canvas").getBoundingClientRect();
      return { x: box.left + x, y: box.top + y, row: r, values: [1, 2, 3].map((c) => g.getValue(r, c)) };
    });
    await page.mouse.move(t.x - 40, t.y + 20);
    await page.mouse.move(t.x - 1, t.y, { steps: 4 });
    const selected = await fig.evaluate((f) => f.graph.getSelection());
    last = (await fig.locator(".chart-hover").textContent()) || "";
    const want = ["GPUs allocated", "GPUs busy (a minibatch lately)", "GPUs up"].map((l, i) => `${l}: ${Number(t.values[i].toPrecision(4))}`);
    if (selected === t.row && want.every((w) => last.includes(w)) && / minutes ago · /.test(last)) return;
    await page.waitForTimeout(500);
  }
  assert.fail("hovering the newest point shows its values; the hover line says: " + last);
}

// Dragging across the middle of the plot zooms the x range in (the Reset button appears); the
// zoom is kept when the chart is drawn again (another span and back); Reset shows it all.
async function zoomAndReset(fig) {
  const range = () => fig.evaluate((f) => ({ zoomed: f.graph.isZoomed("x"), x: f.graph.xAxisRange(), all: f.graph.xAxisExtremes() }));
  const before = await range();
  assert.equal(before.zoomed, false);
  assert.equal(await fig.locator(".chart-reset").isVisible(), false);
  await fig.locator(".plot canvas").first().scrollIntoViewIfNeeded();
  const box = await fig.locator(".plot canvas").first().boundingBox();
  const labelsBefore = await fig.locator(".dygraph-axis-label-x").allTextContents();
  await page.mouse.move(box.x + box.width * 0.35, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.65, box.y + box.height * 0.5, { steps: 10 });
  await page.mouse.up();
  const zoomed = await range();
  assert.ok(zoomed.zoomed, "zoomed in on x");
  const width = (r) => r[1] - r[0];
  assert.ok(width(zoomed.x) < 0.5 * width(before.x), `narrower: ${zoomed.x} of ${before.x}`);
  assert.ok(zoomed.x[0] > before.x[0] && zoomed.x[1] < before.x[1], `inside: ${zoomed.x} of ${before.x}`);
  assert.notDeepEqual(await fig.locator(".dygraph-axis-label-x").allTextContents(), labelsBefore, "new x axis labels");
  assert.ok(await fig.locator(".chart-reset").isVisible(), "the Reset button shows once zoomed");
  await screenshot(page, "cluster-history-zoomed-1280");
  // drawn again from a fresh history: the 15 minutes unzoomed, the hour as it was zoomed;
  // the replaced chart's graph is destroyed (it no longer listens to the window)
  const replaced = await fig.elementHandle();
  await page.selectOption("#history-range", "15m");
  await drawnByDygraphs(page.locator("#chart-gpus"), /^minutes ago$/);
  assert.equal((await range()).zoomed, false, "another span is not zoomed");
  assert.equal(await replaced.evaluate((f) => f.querySelector(".plot").childElementCount), 0, "the old graph destroyed");
  await page.selectOption("#history-range", "1h");
  await drawnByDygraphs(page.locator("#chart-gpus"), /^minutes ago$/);
  const again = await range();
  assert.ok(again.zoomed && Math.abs(again.x[0] - zoomed.x[0]) < 1e-9 && Math.abs(again.x[1] - zoomed.x[1]) < 1e-9,
    `the zoom is kept: ${again.x} (was ${zoomed.x})`);
  await fig.locator(".chart-reset").click();
  const reset = await range();
  assert.equal(reset.zoomed, false, "Reset unzooms");
  assert.deepEqual(reset.x, reset.all, "the whole history shows again");
  assert.equal(await fig.locator(".chart-reset").isVisible(), false);
}

// What if: the jobs that completed, replayed by the server's simulator under the policies of
// the scheduling core. The refusal while none has completed, then two short real train-mlp
// jobs complete and are replayed under fifo and ringmaster (the live policy), then under all.
test("the what-if page replays the completed jobs under the policies and draws them", { timeout: 300000 }, async () => {
  // the live default again (the scheduler test switched to fifo): its row is the one in force
  assert.equal((await call(server, "PUT", "/scheduler", { policy: "ringmaster" })).status, 200);
  const policies = (await call(server, "GET", "/scheduler")).body.policies.map((p) => p.name);
  await page.click('#nav a[data-nav="whatif"]');
  await page.waitForURL(/#\/whatif$/);
  await expectText(page.locator("#whatif-current"), /No what-if run yet/);
  assert.equal(await page.locator("#whatif-policies input[type=checkbox]:checked").count(), policies.length, "all ticked");
  // every job above was cancelled: nothing to replay, in the server's words
  await page.click("#whatif-run");
  await expectText(page.locator("#whatif-error"), /^Nothing replayed: no job completed in the last 7 days/);
  await page.click("#whatif-none");
  await page.click("#whatif-run");
  await expectText(page.locator("#whatif-error"), /^Choose at least one policy\.$/);

  const ids = [];
  for (const name of ["whatif-a", "whatif-b"]) {
    const sub = await call(server, "POST", "/jobs", { name, gpus: 1,
      command: [TRAIN_MLP, "--steps", "200", "--params", "2000", "--print-every", "50"],
      env: { ASAN_OPTIONS: "detect_leaks=0:protect_shadow_gap=0" } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    ids.push(sub.body.id);
  }
  const states = async () => Promise.all(ids.map(async (id) => (await call(server, "GET", "/jobs/" + id)).body.state));
  for (const deadline = Date.now() + 60000; (await states()).some((s) => s !== "COMPLETED") && Date.now() < deadline;)
    await page.waitForTimeout(500);
  assert.deepEqual(await states(), ["COMPLETED", "COMPLETED"]);

  // fifo and ringmaster over the last hour; the page follows the run by its polling alone:
  // record what the progress line says and mark the document to see that it never reloads
  await page.check("#whatif-p-fifo");
  await page.check("#whatif-p-ringmaster");
  await page.selectOption("#whatif-period", "3600");
  await page.evaluate(() => {
    window.__whatifSeen = [];
    const note = () => {
      const st = document.getElementById("whatif-state"), p = document.getElementById("whatif-progress");
      const v = st && p ? st.textContent + " " + p.textContent : "";
      if (v && window.__whatifSeen[window.__whatifSeen.length - 1] !== v) window.__whatifSeen.push(v);
    };
    new MutationObserver(note).observe(document.getElementById("whatif-current"), { childList: true, subtree: true });
  });
  await page.click("#whatif-run");
  const first = Number((await expectText(page.locator("#flash"), /What-if run \d+ started: 2 jobs under 2 policies/)).match(/run (\d+)/)[1]);
  const card = page.locator(`#whatif-run-card[data-run="${first}"]`);
  await expectText(card.locator("#whatif-state"), /^done$/, 90000);
  const seen = await page.evaluate(() => window.__whatifSeen);
  assert.match(seen[0], /^running [01] of 2 policies$/, "the run as the POST answered: " + seen.join(" | "));
  assert.equal(seen[seen.length - 1], "done 2 of 2 policies", seen.join(" | "));
  assert.equal(await page.locator("#whatif-progress-bar").evaluate((el) => [el.value, el.max].join("/")), "2/2");
  assert.deepEqual(await page.locator("#whatif-table tbody tr").evaluateAll((rs) => rs.map((r) => r.dataset.policy)), ["fifo", "ringmaster"]);
  await expectText(page.locator("#whatif-table tr.in-force"), /^ringmaster\s*in force/);
  assert.equal(await page.locator("#whatif-table tr.in-force").count(), 1);
  // the best mean JCT is marked unless every policy ties (which two short jobs on six free GPUs may)
  const means = (await call(server, "GET", "/whatif/" + first)).body.results.map((r) => r.mean_jct_s);
  assert.equal(await page.locator("#whatif-table tbody tr.best").count(), means[0] === means[1] ? 0 : 1);
  await expectText(page.locator('#whatif-table tr[data-policy="fifo"]'), /^fifo.*\d+ s\s*\d+\.\d\d×\s*\d+ s\s*\d+ s\s*\d+ %/s);
  await expectText(page.locator("#whatif-table tfoot"), /measured.*\d+ s\s*1\.00×/s);
  await expectText(card.locator("dl.fields"), /jobs replayed\s*2 .*cluster\s*1 node of 4 GPUs.*1 node of 2 GPUs.*policy in force\s*ringmaster.*measured\s*mean JCT \d+ s · p99 JCT \d+ s · mean queueing \d+ s.*speed models\s*0 of 2 jobs replayed at their own fitted speed model, .*; 2 with their measured course/s);
  // the bars, drawn by dygraphs with our plotter: per policy its mean and p99 JCT, the
  // measured mean as a dashed rule; hovering a policy says its figures
  await whatifBars(page.locator("#whatif-chart"), ["fifo", "ringmaster"]);
  // the trace, fetched with the token and saved as a file
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#whatif-trace")]);
  assert.equal(download.suggestedFilename(), `whatif-${first}-trace.csv`);
  const csv = fs.readFileSync(await download.path(), "utf8").trim().split("\n");
  assert.equal(csv[0], "job_id,submit_time_s,num_gpus,duration_s,user,elastic,min_gpus,max_gpus," +
    "speed_model,speed_theta,batch_per_gpu,dataset_size,course,loss_model,grad_sqr,grad_var");
  assert.deepEqual(csv.slice(1).map((l) => Number(l.split(",")[0])), ids);
  await screenshot(page, "whatif-1280");

  // every policy, a second run; the first stays listed and can be picked again
  await page.click("#whatif-all");
  await page.click("#whatif-run");
  const second = Number((await expectText(page.locator("#flash"), new RegExp(`What-if run \\d+ started: 2 jobs under ${policies.length} policies`))).match(/run (\d+)/)[1]);
  assert.ok(second > first);
  await expectText(page.locator(`#whatif-run-card[data-run="${second}"] #whatif-state`), /^done$/, 120000);
  assert.equal(await page.locator("#whatif-table tbody tr:not(.pending)").count(), policies.length);
  await whatifBars(page.locator("#whatif-chart"), policies);
  assert.equal(await page.locator("#whatif-table tr.in-force").getAttribute("data-policy"), "ringmaster");
  await screenshot(page, "whatif-all-1280");
  await expectText(page.locator("#whatif-runs-table tbody"), new RegExp(`Run ${second}.*done.*Run ${first}.*done`, "s"));
  await page.click(`#whatif-runs-table a[href="#/whatif?run=${first}"]`);
  await page.waitForURL(new RegExp(`#/whatif\\?run=${first}$`));
  await page.locator(`#whatif-run-card[data-run="${first}"]`).waitFor();
  assert.equal(await page.locator("#whatif-table tbody tr").count(), 2);
  assert.equal(await page.locator(`#whatif-runs-table tr.current`).getAttribute("data-run"), String(first));

  // the rows of a run under way: replayed ones (the lower mean JCT best), the one replaying
  // now, those still waiting; and the cluster in words
  const got = await page.evaluate(async () => {
    const w = await import("/js/pages/whatif.js");
    const run = { state: "running", policies: ["fifo", "ringmaster", "tiresias", "gandiva"], policy_in_force: "ringmaster",
      measured: { mean_jct_s: 10 }, results: [{ policy: "fifo", in_force: false, mean_jct_s: 8 }, { policy: "ringmaster", in_force: true, mean_jct_s: 12 }] };
    const tied = { ...run, results: [run.results[0], { ...run.results[1], mean_jct_s: 8 }] };
    return { rows: w.resultRows(run), tied: w.resultRows(tied).filter((r) => r.best).length,
      cluster: w.clusterText("2x4:v100,1x1:a100") };
  });
  assert.deepEqual(got.rows.map((r) => [r.policy, r.pending, Boolean(r.now), r.inForce, Boolean(r.best), r.ratio ?? null]),
    [["fifo", false, false, false, true, 0.8], ["ringmaster", false, false, true, false, 1.2],
      ["tiresias", true, true, false, false, null], ["gandiva", true, false, false, false, null]]);
  assert.equal(got.tied, 0, "no best among ties");
  assert.equal(got.cluster, "2 nodes of 4 GPUs (v100), 1 node of 1 GPU (a100)");
});

// The ledger (sql/039_usage_ledger.sql) has booked the GPU time of the jobs run above: the
// usage page's table says the API's figures, and the chart stacks them per day, by user and
// then by what the GPUs did.
test("the usage page shows where the GPU-hours went, per user and per day", T, async () => {
  const report = (await call(server, "GET", "/reports/usage?by=user")).body;
  const admin = report.items.find((r) => r.user === "admin");
  assert.ok(admin && admin.allocated > 0, "the admin's jobs held GPUs: " + JSON.stringify(report.items));
  const parts = admin.useful + admin.idle + admin.lost.total;
  assert.ok(Math.abs(parts - admin.allocated) <= 0.01 * admin.allocated, "the parts add up: " + JSON.stringify(admin));
  await page.click('#nav a[data-nav="usage"]');
  await page.waitForURL(/#\/usage$/);
  const row = page.locator('#usage-table tr[data-user="admin"]');
  await row.waitFor();
  const cells = await row.locator("td").allTextContents();
  assert.equal(cells[1], admin.allocated.toFixed(2), "allocated as the API says");
  assert.equal(cells[2], admin.useful.toFixed(2), "useful as the API says");
  const fig = page.locator("#usage-chart figure.chart");
  await drawnBarChart(fig, 30);
  assert.match(await fig.locator("figcaption").textContent(), /admin/);
  const stacked = await fig.evaluate((f) => {
    const g = f.graph, last = g.numRows() - 1;
    const col = g.getLabels().length - 1;
    return { labels: g.getLabels().slice(1), today: g.getValue(last, col),
             yesterday: last > 0 ? g.getValue(last - 1, col) : 0 };
  });
  // the jobs ran minutes ago: on today's bar, or on yesterday's when the suite crossed midnight
  // (a fresh-clone run at 23:57-00:00 had all its GPU-hours on the day before)
  const crossed = new Date(suiteStart).toDateString() !== new Date().toDateString();
  assert.ok(stacked.today > 0 || (crossed && stacked.yesterday > 0), "today's bar: " + JSON.stringify(stacked));
  await page.selectOption("#usage-stack", "part");
  await expectText(fig.locator("figcaption"), /useful.*idle.*lost: launches.*lost: faults/);
  await screenshot(page, "usage");
});

test("at phone width the pages fit the screen", T, async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [hash, name, ready] of [["#/jobs", "jobs", "#jobs-table"], ["#/cluster", "cluster", '[data-node="sim-a"]'], ["#/scheduler", "scheduler", "#rounds-table"],
    [`#/jobs/${jobId}`, "job", "#sec-events li"], ["#/submit", "submit", "#submit-form"], ["#/whatif", "whatif", "#whatif-chart"], ["#/usage", "usage", "#usage-table"]]) {
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

// The pure helpers, run in the page itself (the modules are what the server ships).
test("helpers: argv splitting, field mapping, bar labels, fits, throughput, GPU owners", T, async () => {
  const got = await page.evaluate(async () => {
    const submit = await import("/js/pages/submit.js");
    const chart = await import("/js/chart.js");
    const parts = await import("/js/pages/jobparts.js");
    const cluster = await import("/js/pages/cluster.js");
    const jobs = await import("/js/pages/jobs.js");
    const job = await import("/js/pages/job.js");
    const fc = await import("/js/pages/forecast.js");
    const at = (s) => new Date(Date.now() + s * 1000).toISOString();
    let unclosed = null;
    const now = Date.parse("2026-01-01T12:00:00Z");
    const rows = [
      { at: "2026-01-01T11:58:00Z", gpus_total: 4, gpus_allocated: 2, gpus_busy: 1, queue_length: 3, jobs_running: 1, wait_pending_s: 30, wait_started_s: null },
      { at: "2026-01-01T11:59:00Z", gpus_total: 4, gpus_allocated: 4, gpus_busy: 4, queue_length: 0, jobs_running: 2, wait_pending_s: null, wait_started_s: 90 },
    ];
    const series = cluster.historySeries(rows, cluster.RANGES[0], now);
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
      rows: chart.chartRows([{ points: [[1, 2], [0, 1], [NaN, 3]] }, { points: [[1, 5], [2, NaN], [3, 4]] }]),
      // the bar chart's x labels: whole in a wide slot; staggered, then cut, in narrower ones
      barLabels: [100, 50, 20].map((slot) => chart.barLabels([{ label: "fifo" }, { label: "exploratory" }, { label: "a<b" }], slot)),
      fitAt: [fit.at(0), fit.at(2)],
      noFit: parts.convergence({ convergence: { b0: 1 } }),
      tput: parts.measuredThroughput({ items: [
        { world_size: 1, step_time_s: 0.5 }, { world_size: 1, step_time_s: 0.5 },
        { world_size: 2, step_time_s: 0.25 }, { world_size: 0, step_time_s: 1 } ] }, 100),
      path: cluster.historyPath(cluster.RANGES[2], now),
      gpus: series.gpus.map((se) => se.points),
      wait: series.wait.map((se) => se.points.map(([x, y]) => [x, Number.isNaN(y) ? "NaN" : y])),
      waitUnit: series.waitUnit,
      finish: [
        jobs.predictedFinish({ state: "RUNNING", predicted_finish: "2026-01-01T12:10:00.000Z" }),
        jobs.predictedFinish({ state: "PENDING", predicted_start: "2026-01-01T13:00:00Z", predicted_finish: "2026-01-01T13:07:30.000Z" }),
        jobs.predictedFinish({ state: "RUNNING", predicted_finish: null }),
        jobs.predictedFinish({ state: "COMPLETED", predicted_finish: "2026-01-01T12:00:05.000Z" }),
        jobs.predictedFinish({ state: "RUNNING" }),
      ],
      // the job's speed on each GPU type, with where each figure comes from
      types: parts.typeRows({ speed: { by_gpu_model: [
        { gpu_model: "NVIDIA A100-SXM4-80GB", source: "measured", measured_sizes: 2, gpus: 4,
          step_time_s: 0.2012, samples_per_second: 2545.4, remaining_s: 190 },
        { gpu_model: "Tesla T4", source: "estimated", uncertainty: 0.3, gpus: 4, step_time_s: 0.8,
          samples_per_second: 640, remaining_s: null },
        { gpu_model: "Tesla V100", source: "factor", speed: 1, gpus: 4, step_time_s: null } ] } }),
      noTypes: parts.typeRows({ speed: null }),
      // a goodput job's batch and why the scheduler chose it (the model's batch_choice)
      batch: [
        job.batchText({ batch: 16, adaptive_batch: { min: 16, max: 256 }, current_batch: 46,
          model: { batch_choice: { batch: 46, gpus: 2, init_batch: 16, adaptive: true, efficiency: 0.8312,
            goodput_x: 1.29, why: "batch 46 on 2 GPUs: goodput 1.29x of batch 16" } } }),
        job.batchText({ batch: 64, adaptive_batch: null, current_batch: null, model: {} }),
        job.batchText({ batch: null }),
      ],
      // the last checkpoint the job reported (libringjob), what a preemption goes back to
      ckpt: [
        job.checkpointText({ state: "RUNNING", checkpoint: { step: 1200, at: "2026-01-01T11:57:00Z" } }),
        job.checkpointText({ state: "RUNNING", checkpoint: null }),
        job.checkpointText({ state: "PENDING" }),
      ],
      // forecasts (docs/forecast.md): the band's text, the queue, the calibration
      band: [fc.bandText({ start_p50: at(600), start_p90: at(1200) }, "start"), fc.bandText(null, "start"),
        fc.bandText({ finish_p50: at(3600) }, "finish")],
      queue: fc.queueTable([{ id: 6, name: "b", user: "u", gpus: 4, queue_position: 2, forecast: null },
        { id: 5, name: "a", user: "u", gpus: 2, queue_position: 1, forecast: { start_p50: at(600) } }])
        .querySelectorAll("tbody tr").length,
      queueFirst: fc.queueTable([{ id: 6, name: "b", gpus: 4, queue_position: 2 },
        { id: 5, name: "a", gpus: 2, queue_position: 1, forecast: { start_p50: at(600) } }])
        .querySelector("tbody tr .forecast-start").textContent,
      calib: [...fc.calibrationTable([{ event: "start", lead: "1-4h", n: 20, within_p90: 0.9 }])
        .querySelectorAll("tbody td")].map((td) => td.textContent),
      noChart: fc.bandChart({}),
      gpu0: owners.get("1/0").jobs.map((j) => j.id),
      gpu1: [owners.get("1/1").jobs.map((j) => j.id), owners.get("1/1").packed, owners.get("1/1").suspended],
    };
  });
  assert.deepEqual(got.argv, ["python3", "train.py", "--name", "a b", "--x", 'c "d"', "e f", ""]);
  assert.deepEqual(got.unclosed, ["command", 'a " quote is not closed']);
  assert.deepEqual(got.fields, ["command", "env", "gpus", null]);
  assert.deepEqual(got.rows, [[0, 1, null], [1, 2, 5], [2, null, null], [3, null, 4]]);
  assert.deepEqual(got.barLabels, [
    { stagger: false, labels: ["fifo", "exploratory", "a&lt;b"] },
    { stagger: true, labels: ["fifo", "<br>exploratory", "a&lt;b"] },
    { stagger: true, labels: ["fifo", "<br>expl…", "a&lt;b"] },
  ]);
  assert.deepEqual(got.fitAt, [1, 0.75]);
  assert.equal(got.noFit, null);
  assert.deepEqual(got.tput, [[1, 200], [2, 800]]);
  assert.equal(got.path, "/cluster/history?since=2026-01-01T06%3A00%3A00.000Z&limit=1000&step=60");
  assert.deepEqual(got.gpus, [[[-2, 2], [-1, 4]], [[-2, 1], [-1, 4]], [[-2, 4], [-1, 4]]]);
  assert.deepEqual(got.wait, [[[-2, 30], [-1, "NaN"]], [[-2, "NaN"], [-1, 90]]]);
  assert.equal(got.waitUnit, "s");
  assert.deepEqual(got.finish, ["2026-01-01T12:10:00.000Z", "2026-01-01T13:07:30.000Z", null, null, null]);
  assert.deepEqual(got.band, ["in 10 min (P90 in 20 min)", "", "in 1 h 0 min"]);
  assert.equal(got.queue, 2);
  assert.equal(got.queueFirst, "in 10 min", "the queue in its order, with the forecast start");
  assert.deepEqual(got.calib, ["–", "–", "90 % of 20", "–", "–", "–", "–", "–"]);
  assert.equal(got.noChart, null);
  assert.deepEqual(got.gpu0, [7]);
  assert.deepEqual(got.gpu1, [[7, 8], true, true]);
  assert.deepEqual(got.types, [
    { type: "NVIDIA A100-SXM4-80GB", step: "0.201 s", rate: "2,545", finish: "3 min 10 s", from: "measured (2 sizes)", source: "measured" },
    { type: "Tesla T4", step: "0.800 s", rate: "640", finish: "—", from: "estimated ± 30 %", source: "estimated" },
    { type: "Tesla V100", step: "—", rate: "—", finish: "—", from: "one factor (1× the reference)", source: "factor" },
  ]);
  assert.deepEqual(got.noTypes, []);
  assert.deepEqual(got.batch, [
    { declared: "16 (adaptive up to 256), runs 46",
      chosen: "batch 46 on 2 GPUs: goodput 1.29x of batch 16; statistical efficiency 0.83" },
    { declared: "64 (fixed)", chosen: "" },
    null,
  ]);
  assert.match(got.ckpt[0], /^step 1200, .+ \(.+\)$/);
  assert.deepEqual(got.ckpt.slice(1), ["none reported", ""]);
});

test("the dashboard runs under its Content-Security-Policy without a violation", T, async () => {
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline")));
  });
  const resp = await fetch(server.url + "/");
  const hdr = Object.fromEntries(resp.headers);
  await page.goto(server.url + "/?csp#/cluster"); // a full load, which runs the init script
  assert.match(hdr["content-security-policy"] || "", /default-src 'self'/);
  assert.match(hdr["content-security-policy"] || "", /frame-ancestors 'none'/);
  assert.doesNotMatch(hdr["content-security-policy"] || "", /unsafe-inline/);
  assert.equal(hdr["x-content-type-options"], "nosniff");
  assert.equal(hdr["referrer-policy"], "no-referrer");
  await page.locator("#gpu-map .gpu").first().waitFor();
  for (const view of ["#/jobs", `#/jobs/${mlpId || jobId}`, "#/scheduler", "#/whatif", "#/cluster"]) {
    await page.goto(server.url + "/?csp" + view);
    await page.waitForTimeout(500);
  }
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
});

test("no script errors in the browser console", T, async () => {
  // The browser logs every non-2xx answer (the 400, 401 and what-if's 422 above are
  // expected); only script errors and other console errors count.
  const real = consoleErrors.filter((m) => !/^Failed to load resource: the server responded with a status of (400|401|404|405|422)/.test(m));
  assert.deepEqual(real, []);
});

test("the workers stop cleanly and leave no job process behind", T, async () => {
  for (const w of [worker, workerB].filter(Boolean)) {
    const { exitCode, left } = await w.stop();
    assert.equal(exitCode, 0, w.name + "'s exit status");
    assert.equal(left, 0, "job processes left running by " + w.name);
    assert.equal(sanitizerReports(w.logFile), "");
  }
});

test("when the server goes away the page says so and keeps what it showed", T, async () => {
  await page.goto(server.url + "/#/jobs");
  await page.locator(`#jobs-table tr[data-job-id="${jobId}"]`).waitFor();
  assert.equal(await server.stop(), 0, "ringmasterd's exit status");
  await expectText(page.locator("#health"), /unreachable/, 15000);
  await expectText(page.locator("#view"), /Cannot refresh \(showing the last list\): cannot reach the server/, 15000);
  assert.ok(await page.locator(`#jobs-table tr[data-job-id="${jobId}"]`).isVisible());
  await screenshot(page, "jobs-server-down-1280");
  assert.equal(sanitizerReports(server.logFile), "");
});
