// cdp.mjs: a headless Chromium driven through the DevTools protocol over
// --remote-debugging-pipe (fd 3: commands in, fd 4: replies and events out,
// each message JSON ended by a NUL): no port, no WebSocket, no npm package.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function launch(width = 1400, height = 1000) {
  const profile = mkdtempSync(join(tmpdir(), "tl-chrome-"));
  const bin = process.env.CHROMIUM || "/usr/bin/chromium";
  const child = spawn(bin, [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", `--user-data-dir=${profile}`,
    "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars", "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const out = child.stdio[3], inp = child.stdio[4];
  let next = 0, buf = Buffer.alloc(0);
  const pending = new Map();
  const exited = new Promise((resolve) => child.on("exit", (code) => {
    for (const p of pending.values()) p.reject(new Error(`chromium exited (${code}) during ${p.method}: ${stderr}`));
    pending.clear();
    resolve(code);
  }));
  inp.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    for (let i; (i = buf.indexOf(0)) >= 0;) {
      const msg = JSON.parse(buf.subarray(0, i).toString("utf8"));
      buf = buf.subarray(i + 1);
      const p = msg.id !== undefined && pending.get(msg.id);
      if (!p) continue;
      pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
    }
  });
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    const id = ++next;
    pending.set(id, { resolve, reject, method });
    out.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  });
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const page = (method, params) => send(method, params, sessionId);
  await page("Page.enable");
  await page("Runtime.enable");
  await page("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false });
  // Every page records its script errors and content-security-policy violations in window.__problems.
  await page("Page.addScriptToEvaluateOnNewDocument", { source: `window.__problems = [];
    addEventListener("error", (e) => __problems.push("error: " + e.message));
    addEventListener("unhandledrejection", (e) => __problems.push("unhandled rejection: " + e.reason));
    document.addEventListener("securitypolicyviolation", (e) => __problems.push("CSP: " + e.violatedDirective + " " + e.blockedURI));
    window.__layoutShift = 0;
    new PerformanceObserver((l) => { for (const e of l.getEntries()) if (!e.hadRecentInput) __layoutShift += e.value; })
      .observe({ type: "layout-shift", buffered: true });` });

  // Evaluates expr in the page (awaiting a promise); throws the page's exception.
  async function evaluate(expr) {
    const r = await page("Runtime.evaluate", { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails)
      throw new Error(`in the page: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text} (${expr.slice(0, 80)})`);
    return r.result.value;
  }
  async function waitFor(expr, what, timeoutMs = 20000) {
    const t0 = Date.now();
    for (;;) {
      const v = await evaluate(expr);
      if (v) return v;
      if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what} (${expr})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  async function navigate(url) {
    await page("Page.navigate", { url });
    await waitFor("document.readyState === 'complete' && !!document.body && !!document.body.dataset.state", `${url} to load`);
  }
  async function screenshot() {
    const r = await page("Page.captureScreenshot", { format: "png", captureBeyondViewport: false });
    return Buffer.from(r.data, "base64");
  }
  async function close() {
    try { await send("Browser.close"); } catch (e) { /* already gone */ }
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
    rmSync(profile, { recursive: true, force: true });
  }
  return { evaluate, waitFor, navigate, screenshot, close, page };
}
