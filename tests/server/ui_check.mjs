// ui_check.mjs: the playground (GET /) in a real headless Chromium.
//   node ui_check.mjs open PORT [SCREENSHOT.png]   a server without a key
//   node ui_check.mjs key PORT KEY                 a server with --api-key KEY
// open: ?example=receipt&run=1 decides at once; every bar's probability in the
// DOM equals the API's for the same request, the winner is the API's value;
// the trace highlights the scored token (the API's ids[position] and its
// text) and lists the label tokens; a bad schema shows the server's own
// message with its JSON path; compare runs two contexts side by side, each
// equal to the API; the form mode edits the schema.
// key: the page asks for the key (a wrong one is refused and asked again),
// then works; a reload does not ask again (session storage).
import { writeFileSync } from "node:fs";
import { launch } from "./cdp.mjs";

const [mode, port, arg] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
let failures = 0;
function check(ok, what) {
  if (!ok) { failures++; console.error("FAIL: " + what); }
}

async function decide(body, key) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers.Authorization = "Bearer " + key;
  const r = await fetch(base + "/v1/decide", { method: "POST", headers, body: JSON.stringify(body) });
  return { status: r.status, data: await r.json() };
}

// What the page sent: its own inputs (the options at their defaults).
const pageBody = (ctxId) => `({context: document.getElementById(${JSON.stringify(ctxId)}).value,
  schema: JSON.parse(document.getElementById("schema").value), mode: "auto", trace: true})`;

const readBars = (side) => `[...document.querySelectorAll('.decision[data-side="${side}"] .bar-row')].map((r) => ({
  field: r.dataset.field, value: r.dataset.value, p: Number(r.dataset.p), width: r.querySelector(".fill").style.width,
  pct: r.querySelector(".pct").textContent, win: r.classList.contains("win")}))`;

// The bars of one side equal the API's decision d.
async function checkBars(b, side, d, what) {
  const bars = await b.evaluate(readBars(side));
  const fields = Object.entries(d.fields);
  const expected = fields.reduce((n, [, f]) => n + (f.probabilities ? Object.keys(f.probabilities).length : 1), 0);
  check(bars.length === expected && bars.length > 0, `${what}: ${bars.length} bars, the API's fields have ${expected} values`);
  for (const bar of bars) {
    const f = d.fields[bar.field];
    const p = f && f.probabilities ? f.probabilities[bar.value] : f && f.probability;
    check(p !== undefined && bar.p === p, `${what}: bar ${bar.field}=${bar.value} shows ${bar.p}, the API says ${p}`);
    check(Math.abs(parseFloat(bar.width) - p * 100) < 1e-4 /* CSS keeps 6 digits */, `${what}: bar ${bar.field}=${bar.value} width ${bar.width} for p ${p}`);
    if (bar.win) check(String(f.value) === bar.value || f.text === bar.value, `${what}: the highlighted bar of ${bar.field} is ${bar.value}, the API's value ${f.value}`);
  }
  const shown = await b.evaluate(`Object.fromEntries([...document.querySelectorAll('.decision[data-side="${side}"] [data-field-value]')].map((e) => [e.dataset.fieldValue, e.textContent]))`);
  for (const [name, f] of fields)
    check(shown[name] === (f.abstained ? "abstained" : JSON.stringify(f.value)), `${what}: ${name} shown as ${shown[name]}, the API's ${JSON.stringify(f.value)}`);
}

async function runAndWait(b, what) {
  await b.evaluate(`document.getElementById("run").click()`);
  return b.waitFor(`["done", "error"].includes(document.body.dataset.state) && document.body.dataset.state`, what);
}

async function openChecks(b) {
  await b.navigate(base + "/?example=receipt&run=1");
  const st = await b.waitFor(`["done", "error"].includes(document.body.dataset.state) && document.body.dataset.state`, "the receipt decision");
  check(st === "done", `?example=receipt&run=1 ended in state ${st}: ${await b.evaluate(`document.getElementById("error").textContent`)}`);
  const body = await b.evaluate(pageBody("context"));
  check(body.schema.title === "Expense report" && /Hilton/.test(body.context), "the receipt example is loaded");
  // no layout shift while the page loads and draws the decision (CLS under 0.1, "good")
  const cls = await b.evaluate("window.__layoutShift");
  check(cls < 0.1, `cumulative layout shift ${cls}`);
  console.log(`layout shift while loading and deciding: ${cls}`);
  // every control has an accessible name (a label, or aria-label)
  const unlabelled = await b.evaluate(`[...document.querySelectorAll("input, select, textarea, button")]
    .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map((e) => e.outerHTML.slice(0, 80))`);
  check(unlabelled.length === 0, `controls without a name: ${JSON.stringify(unlabelled)}`);
  const api = await decide(body);
  check(api.status === 200, `the API answers the page's request (${api.status})`);
  await checkBars(b, 0, api.data, "receipt");

  // The trace: the scored position highlighted, with the API's token there.
  const tr = api.data.fields.expense_type.trace;
  const scored = await b.evaluate(`(() => {
    const d = document.querySelector('article[data-field="expense_type"] details.trace'); d.open = true;
    const r = d.getBoundingClientRect();
    const p = d.querySelectorAll(".prompt .tok.scored");
    return {n: p.length, i: p[0] && Number(p[0].dataset.i), id: p[0] && Number(p[0].dataset.tokenId), text: p[0] && p[0].dataset.piece,
            shown: p[0] && p[0].textContent.replaceAll("↵", ""),
            toks: d.querySelectorAll(".prompt .tok").length, visible: r.height > 0,
            labels: [...d.querySelectorAll("tr[data-label-token]")].map((e) => Number(e.dataset.labelToken))};
  })()`);
  check(scored.n === 1, `one scored token highlighted (${scored.n})`);
  check(scored.i === tr.position && scored.id === tr.ids[tr.position], `the scored token is #${scored.i} id ${scored.id}; the API scored #${tr.position} id ${tr.ids[tr.position]}`);
  check(scored.text === tr.pieces[tr.position] && scored.shown === scored.text, `the scored token reads ${JSON.stringify(scored.shown)} (${JSON.stringify(scored.text)}), the API's piece ${JSON.stringify(tr.pieces[tr.position])}`);
  check(scored.toks === tr.ids.length, `the trace shows ${scored.toks} tokens of ${tr.ids.length}`);
  const labelIds = api.data.fields.expense_type.candidates.map((c) => c.token);
  check(JSON.stringify(scored.labels) === JSON.stringify(labelIds), `label tokens ${scored.labels} (API ${labelIds})`);

  if (arg) { // the committed screenshot: a finished decision (abstaining below 0.9) with a trace open
    await b.evaluate(`document.getElementById("threshold").value = "0.9"`);
    check(await runAndWait(b, "the screenshot's decision") === "done", "the screenshot's decision");
    await b.evaluate(`document.querySelector('article[data-field="reimbursable"] details.trace').open = true`);
    await b.page("Emulation.setDeviceMetricsOverride", { width: 1400, height: 1240, deviceScaleFactor: 1, mobile: false });
    await b.evaluate(`{ const d = document.querySelector('article[data-field="reimbursable"] details.trace'); d.open = false; d.open = true; }`);
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(arg, await b.screenshot());
    await b.evaluate(`document.getElementById("threshold").value = "0"`);
  }

  // A bad schema: the server's message, with its JSON path, on the page.
  const bad = { type: "object", properties: { amount: { type: "integer", minimum: 10, maximum: 1 } } };
  await b.evaluate(`document.getElementById("schema").value = ${JSON.stringify(JSON.stringify(bad))}`);
  const st2 = await runAndWait(b, "the bad schema's reply");
  const shown = await b.evaluate(`document.getElementById("error").hidden ? null : document.getElementById("error").textContent`);
  const apiBad = await decide(await b.evaluate(pageBody("context")));
  const msg = apiBad.data.detail && apiBad.data.detail[0] && apiBad.data.detail[0].msg;
  check(st2 === "error" && apiBad.status === 422, `a bad schema: state ${st2}, API status ${apiBad.status}`);
  check(shown === msg + " show in schema" && msg.startsWith("schema: ") && /\/properties\/amount\/minimum/.test(shown), `the page shows ${JSON.stringify(shown)}; the server said ${JSON.stringify(msg)}`);
  const path = await b.evaluate(`[...document.querySelectorAll("#error .path")].map((e) => e.textContent).join()`);
  check(path === "/properties/amount/minimum", `the JSON path is marked (${path})`);
  const sel = await b.evaluate(`{ document.querySelector("#error .show-path").click(); const t = document.getElementById("schema");
    t.value.slice(t.selectionStart, t.selectionEnd) + "@" + (document.activeElement === t); }`);
  check(sel === '"minimum"@true', `"show in schema" selects the key at the path (${sel})`);
  // a JSON syntax error: where it is
  await b.evaluate(`document.getElementById("schema").value = '{"type": "object",\\n "properties": {,}}'`);
  check(await runAndWait(b, "the broken JSON") === "error", "broken JSON is an error");
  const syn = await b.evaluate(`document.getElementById("error").textContent`);
  check(/line 2, column 17/.test(syn), `a JSON syntax error names its line and column: ${syn}`);

  // Compare: two contexts side by side, each the API's decision.
  await b.evaluate(`{ document.querySelector('[data-example="ticket"]').click();
    const c = document.getElementById("compare"); c.checked = true; c.dispatchEvent(new Event("change"));
    document.getElementById("context-b").value = "The checkout page shows a blank screen for every customer since the 14:02 deploy."; }`);
  const st3 = await runAndWait(b, "the comparison");
  check(st3 === "done", `compare ended in state ${st3}`);
  for (const [side, id] of [[0, "context"], [1, "context-b"]]) {
    const r = await decide(await b.evaluate(pageBody(id)));
    await checkBars(b, side, r.data, `compare side ${side}`);
  }
  await b.evaluate(`{ const c = document.getElementById("compare"); c.checked = false; c.dispatchEvent(new Event("change")); }`);

  // The form mode: the ticket's four fields, and one added becomes JSON.
  const form = await b.evaluate(`(() => { document.getElementById("tab-form").click();
    const n = document.querySelectorAll("#form-fields .field-row").length;
    document.getElementById("add-field").click();
    const s = JSON.parse(document.getElementById("schema").value);
    return {n, fields: Object.keys(s.properties), kind: s.properties.field5 && s.properties.field5.type}; })()`);
  check(form.n === 4 && form.fields.length === 5 && form.kind === "boolean", `form mode: ${JSON.stringify(form)}`);
  const unnamed = await b.evaluate(`[...document.querySelectorAll("#form-fields input, #form-fields select, #form-fields button")]
    .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label")).length`);
  check(unnamed === 0, `${unnamed} form-mode controls without a name`);
  const st4 = await runAndWait(b, "the form's schema");
  check(st4 === "done", `the form's schema decides (${st4})`);
  const r4 = await decide(await b.evaluate(pageBody("context")));
  await checkBars(b, 0, r4.data, "form schema");
}

async function unknownExample(b) {
  await b.navigate(base + "/?example=no_such_thing&run=1");
  const st = await b.waitFor(`["done", "error"].includes(document.body.dataset.state) && document.body.dataset.state`, "an unknown example");
  const msg = await b.evaluate(`document.getElementById("error").textContent`);
  check(st === "error" && /no example named "no_such_thing".*receipt/.test(msg), `an unknown example is named (${st}: ${msg})`);
}

async function keyChecks(b, key) {
  await b.navigate(base + "/?example=receipt&run=1");
  await b.waitFor(`document.getElementById("key-dialog").open`, "the key dialog");
  check(await b.evaluate(`document.body.dataset.state !== "done"`), "nothing decided before the key");
  await b.evaluate(`document.getElementById("key-input").value = "wrong-key"; document.getElementById("key-submit").click()`);
  await b.waitFor(`document.getElementById("key-dialog").open && !document.getElementById("key-error").hidden`, "the key asked again after a wrong one");
  await b.evaluate(`document.getElementById("key-input").value = ${JSON.stringify(key)}; document.getElementById("key-submit").click()`);
  const st = await b.waitFor(`["done", "error"].includes(document.body.dataset.state) && document.body.dataset.state`, "the decision after the key");
  check(st === "done", `with the key the decision ends in ${st}`);
  const body = await b.evaluate(pageBody("context"));
  check((await decide(body)).status === 403, "the API itself refuses a request without the key");
  const api = await decide(body, key);
  await checkBars(b, 0, api.data, "with the key");
  check(await b.evaluate(`sessionStorage.getItem("typellm.apiKey")`) === key, "the key is kept in session storage");
  await b.navigate(base + "/?example=receipt&run=1");
  const st2 = await b.waitFor(`(["done", "error"].includes(document.body.dataset.state) || document.getElementById("key-dialog").open) && document.body.dataset.state`, "the decision after a reload");
  check(st2 === "done" && !(await b.evaluate(`document.getElementById("key-dialog").open`)), "a reload does not ask for the key again");
}

const b = await launch();
try {
  if (mode === "open") {
    await openChecks(b);
    const problems = await b.evaluate("window.__problems");
    check(problems.length === 0, `the playground reported no script error or CSP violation: ${JSON.stringify(problems)}`);
    await unknownExample(b);
  }
  else if (mode === "key") await keyChecks(b, arg);
  else throw new Error("usage: ui_check.mjs open|key PORT [ARG]");
  const problems = await b.evaluate("window.__problems");
  check(problems.length === 0, `the page reported no script error or CSP violation: ${JSON.stringify(problems)}`);
} catch (e) {
  failures++;
  console.error("FAIL: " + (e.stack || e));
} finally {
  await b.close();
}
if (failures) {
  console.error(`ui_check ${mode}: ${failures} failure(s)`);
  process.exit(1);
}
console.log(`ui_check ${mode}: ok`);
