// The typellm playground: edits a context and a schema, runs them through
// the server's public POST /v1/decide (with "trace": true) and draws the
// answer: a bar chart per field (the abstain threshold marked), the label
// mass, usage, and the exact prompt scored. Plain JS, no dependencies, no
// network beyond this server. The page's state is on <body data-state>
// (idle | running | done | error) so a test can wait for it.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY_STORE = "typellm.apiKey";
  const KINDS = ["enum", "boolean", "score", "integer", "number"];
  let examples = [];
  let formFields = [];     // the form mode's model of the schema
  let formBase = {};       // top-level keys the form does not edit (title, description, ...)

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "style") e.style.cssText = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }

  function setState(s) { document.body.dataset.state = s; }

  // ---- the API key: asked once, kept in this tab's session storage ---------

  let keyWaiters = null;
  function askKey(message) {
    const dlg = $("key-dialog");
    $("key-error").hidden = !message;
    $("key-error").textContent = message || "";
    $("key-input").value = "";
    $("key-button").hidden = false;
    if (!keyWaiters) {
      keyWaiters = [];
      dlg.showModal();
      $("key-input").focus();
    }
    return new Promise((resolve) => keyWaiters.push(resolve));
  }
  $("key-form").addEventListener("submit", () => {
    sessionStorage.setItem(KEY_STORE, $("key-input").value.trim());
    const w = keyWaiters || [];
    keyWaiters = null;
    w.forEach((r) => r());
  });
  $("key-dialog").addEventListener("cancel", (ev) => ev.preventDefault()); // the page cannot work without it
  $("key-button").addEventListener("click", () => askKey(""));

  // fetch with the key; 401/403 asks for it (again) and retries.
  async function api(path, body) {
    for (;;) {
      const headers = {};
      const key = sessionStorage.getItem(KEY_STORE);
      if (key) headers.Authorization = "Bearer " + key;
      if (body) headers["Content-Type"] = "application/json";
      const res = await fetch(path, { method: body ? "POST" : "GET", headers, body: body ? JSON.stringify(body) : undefined });
      if (res.status === 401 || res.status === 403) {
        if (key) sessionStorage.removeItem(KEY_STORE);
        await askKey(key ? "The server refused that key; try again." : "");
        continue;
      }
      let data = null;
      try { data = await res.json(); } catch (e) { data = null; }
      return { status: res.status, data };
    }
  }

  // ---- examples --------------------------------------------------------------

  async function loadExamples() {
    try {
      const res = await fetch("/ui/examples.json");
      examples = res.ok ? await res.json() : [];
    } catch (e) { examples = []; }
    const box = $("examples");
    box.replaceChildren(...examples.map((ex) =>
      el("button", { type: "button", "data-example": ex.name, title: ex.title || ex.name, onclick: () => useExample(ex.name) }, ex.name)));
  }

  function useExample(name) {
    const ex = examples.find((e) => e.name === name);
    if (!ex) return false;
    $("context").value = ex.context.replace(/\n$/, "");
    for (const b of $("examples").children) b.setAttribute("aria-pressed", String(b.dataset.example === name));
    setSchema(ex.schema);
    return true;
  }

  // ---- the schema: JSON text and a simple form --------------------------------

  function setSchema(obj) {
    $("schema").value = JSON.stringify(obj, null, 2);
    if (!$("schema-form-pane").hidden) schemaToForm();
  }

  function fieldKind(f) {
    if (Array.isArray(f.enum)) return "enum";
    if (f.type === "boolean") return "boolean";
    if (f.format === "score") return "score";
    if (f.type === "integer") return "integer";
    if (f.type === "number") return "number";
    return null;
  }

  function schemaToForm() {
    let s;
    try { s = JSON.parse($("schema").value || "{}"); } catch (e) {
      $("form-note").textContent = "The JSON does not parse (" + e.message + "): fix it in the JSON tab first.";
      formFields = null;
      renderForm();
      return;
    }
    const props = (s && s.properties) || {};
    formBase = Object.assign({}, s);
    delete formBase.properties;
    formFields = Object.entries(props).map(([name, f]) => {
      const { type, enum: en, format, question, minimum, maximum, ...rest } = f;
      return { name, kind: fieldKind(f) || "enum", question: question || "", values: (en || []).join(", "),
               minimum: minimum ?? "", maximum: maximum ?? "", rest, unsupported: !fieldKind(f) };
    });
    const odd = formFields.filter((f) => f.unsupported).map((f) => f.name);
    $("form-note").textContent = odd.length ? "Fields the form shows as enums (edit them as JSON): " + odd.join(", ") : "";
    renderForm();
  }

  function formToSchema() {
    if (!formFields) return;
    const properties = {};
    for (const f of formFields) {
      if (!f.name) continue;
      const out = {};
      if (f.kind === "enum") { out.type = "string"; out.enum = f.values.split(",").map((v) => v.trim()).filter(Boolean); }
      else if (f.kind === "boolean") out.type = "boolean";
      else if (f.kind === "score") { out.type = "number"; out.format = "score"; }
      else {
        out.type = f.kind;
        if (f.minimum !== "") out.minimum = Number(f.minimum);
        if (f.maximum !== "") out.maximum = Number(f.maximum);
      }
      if (f.question) out.question = f.question;
      properties[f.name] = Object.assign(out, f.rest || {});
    }
    const s = Object.assign({ type: "object" }, formBase, { properties });
    if (Array.isArray(s.required)) s.required = s.required.filter((r) => r in properties);
    $("schema").value = JSON.stringify(s, null, 2);
  }

  function renderForm() {
    const box = $("form-fields");
    if (!formFields) { box.replaceChildren(); return; }
    box.replaceChildren(...formFields.map((f, i) => {
      const id = (k) => "ff-" + i + "-" + k;
      const upd = (k) => (ev) => { f[k] = ev.target.value; if (k === "kind") renderForm(); formToSchema(); };
      const kind = el("select", { id: id("kind"), onchange: upd("kind") },
        KINDS.map((k) => el("option", { value: k, selected: f.kind === k }, k)));
      const extra = f.kind === "enum"
        ? [el("label", { for: id("values") }, "Values (comma separated)"), el("input", { id: id("values"), value: f.values, oninput: upd("values") })]
        : f.kind === "integer" || f.kind === "number"
          ? [el("label", { for: id("min") }, "Minimum / maximum"),
             el("span", { style: "display:flex;gap:4px" },
               el("input", { id: id("min"), type: "number", value: f.minimum, oninput: upd("minimum"), "aria-label": "minimum" }),
               el("input", { type: "number", value: f.maximum, oninput: upd("maximum"), "aria-label": "maximum" }))]
          : [el("span", { class: "muted" }, f.kind === "boolean" ? "true / false" : "0.0 … 1.0 in tenths")];
      return el("div", { class: "field-row" },
        el("div", {}, el("label", { for: id("name") }, "Field"), el("input", { id: id("name"), value: f.name, oninput: upd("name") })),
        el("div", {}, el("label", { for: id("kind") }, "Kind"), kind),
        el("div", {}, ...extra),
        el("button", { type: "button", class: "remove ghost", "aria-label": "remove field " + f.name,
                       onclick: () => { formFields.splice(i, 1); renderForm(); formToSchema(); } }, "✕"),
        el("div", { class: "wide" }, el("label", { for: id("q") }, "Question"),
          el("input", { id: id("q"), value: f.question, oninput: upd("question"), style: "width:100%" })));
    }));
  }

  function showTab(form) {
    $("tab-json").setAttribute("aria-selected", String(!form));
    $("tab-form").setAttribute("aria-selected", String(form));
    $("schema-json-pane").hidden = form;
    $("schema-form-pane").hidden = !form;
    if (form) schemaToForm();
  }
  $("tab-json").addEventListener("click", () => showTab(false));
  $("tab-form").addEventListener("click", () => showTab(true));
  // the tabs pattern's keys: arrows move between the two tabs
  for (const [id, other, form] of [["tab-json", "tab-form", true], ["tab-form", "tab-json", false]])
    $(id).addEventListener("keydown", (ev) => {
      if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
      ev.preventDefault();
      showTab(form);
      $(other).focus();
    });
  $("add-field").addEventListener("click", () => {
    if (!formFields) return;
    formFields.push({ name: "field" + (formFields.length + 1), kind: "boolean", question: "", values: "", minimum: "", maximum: "", rest: {} });
    renderForm();
    formToSchema();
  });

  // ---- running a decision ------------------------------------------------------

  function requestBody(context) {
    const body = { context, schema: JSON.parse($("schema").value), mode: $("mode").value, trace: true };
    if ($("style").value) body.style = $("style").value;
    const t = Number($("temperature").value), seed = Number($("seed").value), th = Number($("threshold").value);
    if (t > 0) { body.temperature = t; body.seed = Math.max(0, Math.floor(seed)); }
    if (th > 0) body.threshold = th;
    return body;
  }

  // The server's own error text: FastAPI's detail list (loc + msg, the JSON
  // path inside msg) or {"detail":{"message"}} / {"error":{"message"}}.
  function errorText(status, data) {
    const d = data && data.detail;
    if (Array.isArray(d)) return d.map((x) => {
      const at = x.loc ? x.loc.filter((p) => p !== "body").join(".") : "";
      return (at && !String(x.msg).startsWith(at + ":") ? at + ": " : "") + x.msg;
    }).join("\n");
    if (d && d.message) return d.message;
    if (typeof d === "string") return d;
    if (data && data.error && data.error.message) return data.error.message;
    return "HTTP " + status;
  }

  // Where a JSON path (/properties/a/minimum) is in the schema's text: the
  // key of each segment searched for after the previous one's.
  function findPath(path) {
    const text = $("schema").value;
    let at = 0, start = -1, end = -1;
    for (const seg of path.split("/").filter(Boolean)) {
      const key = JSON.stringify(seg.replace(/~1/g, "/").replace(/~0/g, "~")) + ":";
      const i = text.indexOf(key, at) >= 0 ? text.indexOf(key, at) : text.indexOf(key.replace(":", " :"), at);
      if (i < 0) { if (/^\d+$/.test(seg)) continue; break; }
      start = i; end = i + key.length - 1; at = end;
    }
    return start >= 0 ? [start, end] : null;
  }

  function showError(text) {
    const box = $("error");
    box.replaceChildren();
    // a JSON path (/properties/x/...) shown in bold; a button selects the first in the schema
    let where = null;
    for (const part of text.split(/(\/properties\/[^\s:]*)/)) {
      if (!part.startsWith("/properties/")) { box.append(part); continue; }
      box.append(el("span", { class: "path" }, part));
      where = where || findPath(part);
    }
    if (where) box.append(" ", el("button", { type: "button", class: "ghost show-path", onclick: () => {
      showTab(false);
      const ta = $("schema");
      ta.focus();
      ta.setSelectionRange(where[0], where[1]);
      const line = ta.value.slice(0, where[0]).split("\n").length - 1;
      ta.scrollTop = Math.max(0, (line - 3) * parseFloat(getComputedStyle(ta).lineHeight));
    } }, "show in schema"));
    box.hidden = false;
    $("empty").hidden = true;
    $("results").replaceChildren(); // no stale bars beside an error
  }

  // JSON.parse's message with the line and column of its position.
  function syntaxText(e) {
    const m = /position (\d+)/.exec(e.message);
    if (!m) return e.message;
    const before = $("schema").value.slice(0, Number(m[1])).split("\n");
    return e.message + " (line " + before.length + ", column " + (before[before.length - 1].length + 1) + ")";
  }

  async function run() {
    const btn = $("run");
    if (btn.disabled) return;
    $("error").hidden = true;
    let bodies;
    try {
      const ctxs = [$("context").value];
      if ($("compare").checked) ctxs.push($("context-b").value);
      bodies = ctxs.map(requestBody);
    } catch (e) {
      showError("schema: the JSON does not parse: " + syntaxText(e));
      setState("error");
      return;
    }
    btn.disabled = true;
    setState("running");
    $("status").textContent = "deciding…";
    const t0 = performance.now();
    try {
      const replies = await Promise.all(bodies.map((b) => api("/v1/decide", b)));
      const bad = replies.find((r) => r.status !== 200);
      if (bad) {
        showError(errorText(bad.status, bad.data));
        $("status").textContent = "HTTP " + bad.status;
        setState("error");
        return;
      }
      render(bodies, replies.map((r) => r.data));
      $("status").textContent = "done in " + Math.round(performance.now() - t0) + " ms";
      setState("done");
    } catch (e) {
      showError("request failed: " + e.message);
      $("status").textContent = "";
      setState("error");
    } finally {
      btn.disabled = false;
    }
  }

  // ---- drawing the result --------------------------------------------------------

  function pct(p) {
    if (p >= 0.001) return (p * 100).toFixed(p >= 0.1 ? 1 : 2) + "%";
    return p > 0 ? "<0.1%" : "0%";
  }
  function sci(x) { return x >= 0.01 ? x.toFixed(3) : x.toExponential(2); }

  function barRow(field, name, label, p, win, threshold) {
    return el("div", { class: "bar-row" + (win ? " win" : ""), "data-field": field, "data-value": name, "data-p": String(p) },
      el("span", { class: "name", title: name }, name, label ? el("small", {}, " " + label) : null),
      el("span", { class: "track", role: "img", "aria-label": name + " " + pct(p) },
        el("span", { class: "fill", style: "width:" + (p * 100) + "%" }),
        threshold > 0 ? el("span", { class: "threshold", title: "abstain below " + threshold, style: "left:calc(" + threshold * 100 + "% - 1px)" }) : null),
      el("span", { class: "pct" }, pct(p)));
  }

  function isSpecial(piece) { return /^<[|｜]?[^<>\s]*[|｜]?>$/.test(piece) && piece.length > 2; }

  function traceView(name, f) {
    const t = f.trace;
    if (!t || !Array.isArray(t.ids)) return null;
    const pieces = t.pieces || t.ids.map(String);
    const prompt = el("div", { class: "prompt", "data-field": name });
    pieces.forEach((p, i) => {
      const scored = i === t.position;
      // line breaks shown as ↵ (then broken), so a token of white space stays visible
      const shown = p.split("\n").flatMap((part, k) => (k ? [el("span", { class: "ws", "aria-hidden": "true" }, "↵"), "\n", part] : [part]));
      prompt.append(el("span", { class: "tok" + (isSpecial(p) ? " special" : "") + (scored ? " scored" : ""), "data-piece": p,
                                 "data-i": i, "data-token-id": t.ids[i], title: "#" + i + " id " + t.ids[i] + (scored ? " (scored here)" : "") }, shown));
    });
    if (f.label) prompt.append(el("span", { class: "after", title: "the label read after the scored token" }, f.label));
    else if (f.text !== undefined) prompt.append(el("span", { class: "after", title: "generated under the automaton" }, f.text));
    const cands = Array.isArray(f.candidates) ? f.candidates : [];
    const table = cands.length ? el("table", { class: "labels" },
      el("thead", {}, el("tr", {}, el("th", {}, "label"), el("th", {}, "token id"), el("th", {}, "value"), el("th", {}, "logprob"))),
      el("tbody", {}, cands.map((c) => el("tr", { "data-label-token": c.token },
        el("td", {}, c.label), el("td", {}, c.token), el("td", {}, JSON.stringify(c.value)), el("td", {}, c.logprob.toFixed(3)))))) : null;
    const u = t.wave_usage;
    // opened: the scored token scrolled into the prompt's view
    const onToggle = (ev) => {
      const s = prompt.querySelector(".scored");
      if (ev.target.open && s) prompt.scrollTop = Math.max(0, s.offsetTop - prompt.offsetTop - prompt.clientHeight / 2);
    };
    return el("details", { class: "trace", ontoggle: onToggle },
      el("summary", {}, "Trace: " + t.ids.length + " tokens, scored at position " + t.position +
         (t.wave !== undefined ? ", wave " + t.wave : "") + (u ? " (" + u.computed_tokens + " computed, " + u.cached_tokens + " cached)" : "")),
      el("p", { class: "legend" }, el("span", { class: "tok scored" }, "token"), " the position scored: its next-token distribution is read for the labels; ",
         el("span", { class: "after" }, f.label || f.text || ""), " the answer read there"),
      prompt, table);
  }

  function fieldCard(name, f, schemaField, threshold, side) {
    const q = schemaField && (schemaField.question || schemaField.description);
    const head = el("div", { class: "field-head" },
      el("h3", {}, name),
      el("span", { class: "value" + (f.abstained ? " abstained" : ""), "data-field-value": name },
        f.abstained ? "abstained" : JSON.stringify(f.value)),
      f.given ? el("span", { class: "badge" }, "given") : null,
      q ? el("span", { class: "q" }, q) : null);
    const bars = el("div", { class: "bars" + (side === 1 ? " compare-b" : "") });
    if (f.probabilities) {
      const probs = Object.entries(f.probabilities);
      let best = 0;
      probs.forEach(([, p], i) => { if (p > probs[best][1]) best = i; });
      // candidates come in the probabilities' order (one label each)
      const cands = Array.isArray(f.candidates) && f.candidates.length === probs.length ? f.candidates : [];
      probs.forEach(([v, p], i) => bars.append(barRow(name, v, cands[i] && cands[i].label, p, i === best, threshold)));
    } else if (f.probability !== undefined) {
      bars.append(barRow(name, f.text !== undefined ? f.text : JSON.stringify(f.value), null, f.probability, true, threshold));
    }
    const mass = f.label_mass;
    const gauge = mass !== undefined ? el("div", { class: "gauge" },
      el("label", { for: "lm-" + side + "-" + name, style: "margin:0;font-weight:500" }, "label mass"),
      el("meter", { id: "lm-" + side + "-" + name, min: 0, max: 1, low: 0.2, high: 0.8, optimum: 1, value: mass, "data-label-mass": mass }),
      el("span", {}, sci(mass) + (mass < 0.2 ? " (the model mostly wanted to say something else)" : ""))) : null;
    return el("article", { class: "field" + (f.abstained ? " is-abstained" : ""), "data-field": name }, head, bars, gauge, traceView(name, f));
  }

  function decisionView(body, d, side) {
    const u = d.usage || {}, tm = d.timing_ms || {};
    const summary = el("div", { class: "summary" },
      el("span", {}, "prompt ", el("b", {}, u.prompt_tokens)), el("span", {}, "cached ", el("b", {}, u.cached_tokens)),
      el("span", {}, "computed ", el("b", {}, u.computed_tokens)), el("span", {}, "forward passes ", el("b", {}, u.forward_passes)),
      el("span", {}, "time ", el("b", {}, tm.total !== undefined ? tm.total.toFixed(1) + " ms" : "–")),
      el("span", { class: "muted" }, [d.mode, d.style, d.chat_template].filter(Boolean).join(" · ")));
    const props = (body.schema && body.schema.properties) || {};
    const th = body.threshold || 0;
    const cards = Object.entries(d.fields || {}).map(([name, f]) => fieldCard(name, f, props[name], th, side));
    return el("div", { class: "decision", "data-side": side }, summary, cards);
  }

  function render(bodies, decisions) {
    $("empty").hidden = true;
    const two = decisions.length > 1;
    const cols = el("div", { class: "cols" + (two ? " two" : "") },
      decisions.map((d, i) => el("div", { class: "col" },
        two ? el("div", { class: "col-head" }, el("span", { class: "tag" + (i ? " tag-b" : "") }, i ? "B" : "A"), " context " + (i ? "B" : "A")) : null,
        decisionView(bodies[i], d, i))));
    $("results").replaceChildren(cols);
    if (decisions[0] && decisions[0].model) $("model").textContent = "model: " + decisions[0].model;
  }

  // ---- wiring --------------------------------------------------------------------

  $("run").addEventListener("click", run);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); run(); }
  });
  $("compare").addEventListener("change", () => {
    const on = $("compare").checked;
    $("ctx-b").hidden = !on;
    $("tag-a").hidden = !on;
    $("contexts").classList.toggle("two", on);
    if (on && !$("context-b").value) $("context-b").value = $("context").value;
  });

  async function start() {
    setState("idle");
    await loadExamples();
    const q = new URLSearchParams(location.search);
    const name = q.get("example");
    const found = name ? useExample(name) : false;
    if (!found && examples.length) useExample(examples[0].name);
    if (name && !found) {
      showError(`no example named "${name}" in this server (it has: ${examples.map((e) => e.name).join(", ") || "none"})`);
      setState("error");
      return;
    }
    try {
      const models = await api("/v1/models");
      if (models.status === 200 && models.data && models.data.data && models.data.data[0])
        $("model").textContent = "model: " + models.data.data[0].id;
    } catch (e) {
      $("model").textContent = "model: (the server did not answer: " + e.message + ")";
    }
    if (q.get("run") === "1") run();
  }
  start();
})();
