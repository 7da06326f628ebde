// openai_upstream_check.mjs ENGINE_URL ENGINE_KEY FRONT_URL FRONT_KEY [TOL]:
// OpenAI's official JS SDK (openai 7.55.0) asks the same decisions.create of
// an engine (`typellm serve -m`) and of a decision front end for it (`typellm
// serve --upstream`): every answer's choice / score / probabilities must be
// the engine's (values identical, probabilities within TOL, default 1e-7).
// Exits 1 on a difference.
import OpenAI from "openai";

const [engineUrl, engineKey, frontUrl, frontKey, tolArg] = process.argv.slice(2);
const tol = Number(tolArg ?? 1e-7);
const engine = new OpenAI({ apiKey: engineKey, baseURL: `${engineUrl}/v1`, maxRetries: 0 });
const front = new OpenAI({ apiKey: frontKey, baseURL: `${frontUrl}/v1`, maxRetries: 0 });
const model = (await front.models.list()).data[0].id;
const questions = [
  { type: "predicate", name: "outage", instructions: "Is this an outage?" },
  { type: "choice", name: "area", instructions: "Which product area?",
    choices: [{ value: "payments" }, { value: "search" }, { value: "accounts" }] },
  { type: "score", name: "severity", instructions: "How severe is it?",
    levels: [{ label: "low" }, { label: "medium" }, { label: "high" }] },
];
// Deep equality, numbers within tol (probabilities, scores, confidences, label mass).
function same(x, y, path, where) {
  if (typeof x === "number" && typeof y === "number") {
    if (!(Math.abs(x - y) <= tol)) where.push(`${path}: ${x} vs ${y}`);
  } else if (x && typeof x === "object") {
    if (!y || typeof y !== "object") where.push(`${path}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`);
    else for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) same(x[k], y[k], `${path}/${k}`, where);
  } else if (x !== y) where.push(`${path}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`);
}
let failures = 0;
for (const input of ["Checkout returns HTTP 500 for every customer since the deploy.", "A typo on the about page."]) {
  const [a, b] = await Promise.all([engine.decisions.create({ model, input, questions }),
                                    front.decisions.create({ model, input, questions })]);
  const where = [];
  same(a.answers, b.answers, input, where);
  if (where.length) {
    failures++;
    console.error(`FAIL: front end differs from the engine at ${where.join(", ")}:\n${JSON.stringify(a.answers)}\n${JSON.stringify(b.answers)}`);
  }
}
console.log(`openai_upstream_check: ${failures ? failures + " differences" : "the front end answers as the engine"}`);
process.exit(failures ? 1 : 0);
