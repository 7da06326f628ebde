// sdk_check.mjs BASE_URL KEY: the official System One JS SDK
// (@typesafe-ai/sdk) pointed at `typellm serve`: every question type (noul
// with and without criteria, choice with null/string/object descriptions,
// score with 2 and 10 levels and with a null level), the x_-prefixed
// extension, models.list(), and the SDK's typed errors for a bad key (401)
// and an invalid question (422). Exits 1 on a failed check.
import { TypeSafeClient, noul, choice, score, AuthenticationError, UnprocessableEntityError, PermissionDeniedError } from "@typesafe-ai/sdk";

const [baseURL, apiKey] = process.argv.slice(2);
let checks = 0, failures = 0;
const check = (cond, what) => { checks++; if (!cond) { failures++; console.error("FAIL:", what); } };
const near = (a, b) => Math.abs(a - b) < 1e-9;
const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);

const client = new TypeSafeClient({ apiKey, baseURL, retry: { maxRetries: 0 }, logLevel: "off" });
const res = await client.systemOne({
  state: { document: "I was charged twice for my plan. Please refund one charge today.", customer: "ACME" },
  questions: {
    billing: noul("Is this ticket about billing?"),
    refund: noul("Does the customer want money back?", { true: "asks for a refund", false: null }),
    category: choice("What is this ticket about?", { billing: null, technical: "bugs, crashes", other: { note: "anything else" } }),
    urgency: score("How urgent is it?", ["can wait", "this week", "today"]),
    detail: score({ ask: "How detailed is the ticket?" }, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]),
    mood: score("How calm is the customer?", ["Calm", null]),
  },
});
check(typeof res.model === "string" && res.model.length > 0, "model named");
check(Number.isInteger(res.usage.input_tokens) && Number.isInteger(res.usage.output_tokens), "integer usage");
const a = res.answers;
check(Object.keys(a).join() === "billing,refund,category,urgency,detail,mood", "one answer per question, in order");
for (const k of ["billing", "refund"]) {
  check(a[k].type === "noul" && a[k].noul >= 0 && a[k].noul <= 1, `${k}: noul probability`);
  check(Object.keys(a[k]).sort().join() === "noul,type", `${k}: no extra fields`);
}
check(a.category.type === "choice" && ["billing", "technical", "other"].includes(a.category.choice), "choice value");
check(Object.keys(a.category.probabilities).join() === "billing,technical,other", "choice probabilities keyed by option");
check(near(sum(a.category.probabilities), 1), "choice probabilities sum to 1");
const pc = Object.values(a.category.probabilities);
check(near(a.category.confidence, (Math.max(...pc) - 1 / 3) / (1 - 1 / 3)), "choice confidence formula");
for (const [k, n] of [["urgency", 3], ["detail", 10]]) {
  const s = a[k];
  check(s.type === "score" && Object.keys(s.probabilities).length === n, `${k}: ${n} levels`);
  check(near(sum(s.probabilities), 1), `${k}: probabilities sum to 1`);
  check(near(s.score, Object.entries(s.probabilities).reduce((t, [i, p]) => t + Number(i) * p, 0)), `${k}: score = sum i p_i`);
  check(s.confidence >= 0 && s.confidence <= 1 && Object.keys(s.legend).length === n, `${k}: confidence and legend`);
}
check(a.urgency.legend["2"] === "today", "legend echoes the criteria");
// a level sent as null (the request types allow it) is undescribed: "" in the legend, never null
check(a.mood.legend["0"] === "Calm" && a.mood.legend["1"] === "", `null level -> "" in the legend (${JSON.stringify(a.mood.legend)})`);
check(Object.keys(res).sort().join() === "answers,model,usage,x_label_mass", `top-level keys: extensions are x_-prefixed (${Object.keys(res)})`);
check(Object.keys(res.x_label_mass ?? {}).join() === Object.keys(a).join(), "x_label_mass: one figure per question");

const models = await client.models.list();
check(Array.isArray(models) && models[0].name === res.model && typeof models[0].release_date === "string", "models.list()");

try {
  await new TypeSafeClient({ apiKey: "wrong", baseURL, retry: { maxRetries: 0 }, logLevel: "off" })
    .systemOne({ state: "x", questions: { q: noul("?") } });
  check(false, "bad key must throw");
} catch (e) { check(e instanceof AuthenticationError && e.status === 401, `bad key -> AuthenticationError (${e})`); }
try {
  await client.systemOne({ state: "x", questions: { q: score("?", ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]) } });
  check(false, "11 levels must throw");
} catch (e) { check(e instanceof UnprocessableEntityError && e.status === 422, `11 levels -> UnprocessableEntityError (${e})`); }
try {
  await client.systemOne({ state: "x", questions: { q: choice("?", { only: null }) } });
  check(false, "1 option must throw");
} catch (e) { check(e instanceof UnprocessableEntityError, `1 option -> 422 (${e})`); }
check(PermissionDeniedError !== undefined, "SDK exports");

console.error(`sdk_check: ${checks} checks, ${failures} failures`);
process.exit(failures ? 1 : 0);
