// openai_batch_check.mjs BASE_URL KEY PHASE [ARGS]: OpenAI's official JS SDK
// (openai 7.55.0) driving typellm serve's Files and Batch API.
//   run N:     upload N /v1/decisions lines (files.create, purpose batch), batches.create,
//              poll batches.retrieve to completed, files.content(output_file_id): one line
//              per input, in order, each the answers a direct decisions.create gives (within
//              1e-12); a bad line lands in the error file; files.retrieve / del; batches.list.
//   cancel N:  a running batch is cancelled: status cancelling -> cancelled, request_counts
//              partial (0 < completed < N), the output file holds exactly the completed lines.
//   start N:   creates a batch of N lines and prints its id once it is in_progress with
//              some lines done (the caller then kills the server).
//   finish ID N: polls batch ID (after a restart) to completed; N lines, ids unique, in order.
//   upload MB: files.create of an MB MiB batch file (the server's --max-body far below it);
//              prints its id.
//   readback ID MB: files.content(ID) is that file byte for byte; files.delete.
//   toolarge MB: an MB MiB upload is refused: 413, code file_too_large, naming --max-file-mb.
import OpenAI, { toFile } from "openai";

const [base, apiKey, phase, ...args] = process.argv.slice(2);
let checks = 0, failures = 0;
const check = (cond, what) => { checks++; if (!cond) { failures++; console.error("FAIL:", what); } };
const client = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 2 });
const model = (await client.models.list()).data[0].id;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const body = (i) => ({
  model, input: `Ticket ${i}: I was charged ${i % 3 + 2} times for order ${1000 + i}`,
  questions: [
    { type: "predicate", name: "billing", instructions: "Is this ticket about billing?" },
    { type: "choice", name: "tone", instructions: "What is the tone?", choices: [{ value: "calm" }, { value: "angry" }] },
  ],
});
const lines = (n) => Array.from({ length: n }, (_, i) =>
  JSON.stringify({ custom_id: `req-${i}`, method: "POST", url: "/v1/decisions", body: body(i) })).join("\n") + "\n";

async function upload(text) {
  const f = await client.files.create({ file: await toFile(Buffer.from(text), "batch.jsonl"), purpose: "batch" });
  check(f.object === "file" && f.purpose === "batch" && f.bytes === Buffer.byteLength(text), "files.create: file object");
  return f;
}
async function create(text) {
  const f = await upload(text);
  const b = await client.batches.create({ input_file_id: f.id, endpoint: "/v1/decisions", completion_window: "24h" });
  check(b.object === "batch" && b.status === "validating" && b.input_file_id === f.id, `batches.create: ${b.status}`);
  return b;
}
async function poll(id, until, timeoutMs = 120000) {
  const t0 = Date.now();
  let b;
  const seen = new Set();
  for (;;) {
    b = await client.batches.retrieve(id);
    seen.add(b.status);
    if (until(b) || Date.now() - t0 > timeoutMs) return [b, seen];
    await sleep(100);
  }
}
// n MiB of batch lines (deterministic: readback regenerates them).
const bigText = (mb) => {
  const parts = [];
  let size = 0;
  for (let i = 0; size < mb << 20; i++) {
    const l = JSON.stringify({ custom_id: `big-${i}`, method: "POST", url: "/v1/decisions", body: body(i) }) + "\n";
    parts.push(l);
    size += Buffer.byteLength(l);
  }
  return parts.join("");
};
const readLines = async (fileId) => (await (await client.files.content(fileId)).text()).split("\n").filter((l) => l);

if (phase === "run") {
  const n = Number(args[0]);
  const text = lines(n) + JSON.stringify({ custom_id: "bad", method: "POST", url: "/v1/decisions", body: { model } }) + "\n";
  const b0 = await create(text);
  const [b, seen] = await poll(b0.id, (b) => ["completed", "failed", "cancelled"].includes(b.status));
  check(b.status === "completed", `batch ends completed, not ${b.status}: ${JSON.stringify(b.errors)}`);
  check(seen.has("in_progress") || seen.has("finalizing") || seen.has("completed"), "status went through in_progress");
  check(b.request_counts.total === n + 1 && b.request_counts.completed === n && b.request_counts.failed === 1,
    `request_counts ${JSON.stringify(b.request_counts)}`);
  check(b.in_progress_at && b.completed_at >= b.in_progress_at && b.finalizing_at, "timestamps");
  const out = (await readLines(b.output_file_id)).map((l) => JSON.parse(l));
  check(out.length === n, `output file: ${out.length} lines for ${n}`);
  for (let i = 0; i < n; i++) {
    const o = out[i];
    check(o.custom_id === `req-${i}` && o.error === null && o.response.status_code === 200, `line ${i}: ${o.custom_id}`);
    check(typeof o.id === "string" && typeof o.response.request_id === "string", `line ${i}: ids`);
  }
  for (const i of [0, 1, Math.floor(n / 2), n - 1]) { // the same answers as a direct call
    const d = await client.decisions.create(body(i));
    const a = out[i].response.body.answers;
    check(a.length === d.answers.length, `line ${i}: answers`);
    check(Math.abs(a[0].probability - d.answers[0].probability) <= 1e-12, `line ${i}: predicate probability`);
    check(a[1].choice === d.answers[1].choice && a[1].probabilities.every((p, k) =>
      Math.abs(p.probability - d.answers[1].probabilities[k].probability) <= 1e-12), `line ${i}: choice probabilities`);
  }
  const errs = (await readLines(b.error_file_id)).map((l) => JSON.parse(l));
  check(errs.length === 1 && errs[0].custom_id === "bad" && errs[0].response.status_code === 400, "error file: the bad line");
  const fo = await client.files.retrieve(b.output_file_id);
  check(fo.id === b.output_file_id && fo.purpose === "batch_output", "files.retrieve: output file");
  const list = await client.batches.list();
  check(list.data.some((x) => x.id === b.id), "batches.list has the batch");
  const del = await client.files.delete(b.input_file_id);
  check(del.deleted === true, "files.delete");
  let gone = false;
  try { await client.files.retrieve(b.input_file_id); } catch (e) { gone = e.status === 404; }
  check(gone, "a deleted file is 404");
} else if (phase === "cancel") {
  const n = Number(args[0]);
  const b0 = await create(lines(n));
  await poll(b0.id, (b) => b.request_counts.completed >= 3 || b.status !== "validating" && b.status !== "in_progress");
  const c = await client.batches.cancel(b0.id);
  check(c.status === "cancelling" || c.status === "cancelled", `cancel: ${c.status}`);
  const [b] = await poll(b0.id, (b) => b.status === "cancelled");
  check(b.status === "cancelled" && b.cancelled_at && b.cancelling_at, `cancelled: ${b.status}`);
  const rc = b.request_counts;
  check(rc.total === n && rc.completed > 0 && rc.completed + rc.failed < n, `partial counts ${JSON.stringify(rc)}`);
  const out = await readLines(b.output_file_id);
  check(out.length === rc.completed, `output file: ${out.length} lines, completed ${rc.completed}`);
  check(out.every((l, i) => JSON.parse(l).custom_id === `req-${i}`), "cancelled output: the first lines, in order");
  console.log(`cancel: ${rc.completed} of ${n} completed`);
} else if (phase === "start") {
  const n = Number(args[0]);
  const b0 = await create(lines(n));
  const [b] = await poll(b0.id, (b) => b.request_counts.completed >= 5 || b.status === "completed");
  check(b.status === "in_progress", `still in progress when the server is killed (${b.status})`);
  console.log(b.id);
} else if (phase === "finish") {
  const [id, n] = [args[0], Number(args[1])];
  const [b] = await poll(id, (b) => ["completed", "failed", "cancelled"].includes(b.status));
  check(b.status === "completed", `after the restart: ${b.status} ${JSON.stringify(b.errors)}`);
  check(b.request_counts.completed === n && b.request_counts.failed === 0, `counts ${JSON.stringify(b.request_counts)}`);
  const out = (await readLines(b.output_file_id)).map((l) => JSON.parse(l));
  check(out.length === n && out.every((o, i) => o.custom_id === `req-${i}` && o.response.status_code === 200),
    `restarted batch: ${out.length} lines, each once, in order`);
  check(new Set(out.map((o) => o.id)).size === n, "unique line ids");
} else if (phase === "upload") {
  const f = await upload(bigText(Number(args[0])));
  console.log(f.id);
} else if (phase === "readback") {
  const text = bigText(Number(args[1]));
  const got = await (await client.files.content(args[0])).text();
  check(got.length === text.length && got === text, `files.content: ${got.length} bytes for ${text.length}, equal`);
  check((await client.files.delete(args[0])).deleted === true, "files.delete");
} else if (phase === "toolarge") {
  let err = null;
  try { await client.files.create({ file: await toFile(Buffer.from(bigText(Number(args[0]))), "big.jsonl"), purpose: "batch" }); }
  catch (e) { err = e; }
  check(err && err.status === 413 && err.code === "file_too_large" && /--max-file-mb/.test(err.message),
    `an upload over --max-file-mb: ${err && err.status} ${err && err.code} ${err && err.message}`);
}
console.error(`openai_batch_check ${phase}: ${checks} checks, ${failures} failed`);
process.exit(failures ? 1 : 0);
