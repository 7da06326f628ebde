-- load_openai.lua: wrk script for `typellm serve`: a third each of OpenAI
-- decisions (/v1/decisions, the three question types over a few shared
-- inputs), OpenAI chat completions (/v1/chat/completions, short greedy and
-- sampled replies) and System One decisions (/v1/systemone). Any non-200
-- reply is counted and printed at the end (the load test requires zero).
-- Usage: wrk -s bench/load_openai.lua -t4 -c16 -d60s URL -- MODEL_ID
local inputs = {
  "Customer: I was charged twice for my subscription this month. Please refund one of the charges.",
  "Customer: the app crashes every time I open the camera screen on my phone since the last update.",
  "Customer: thanks a lot, the replacement arrived yesterday and works perfectly.",
  "Customer: my package has been stuck in transit for three weeks and support does not answer.",
}
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "load_common.lua")
setup, response, done = common.setup, common.response, common.done
local model = "any"

function init(args)
  common.init()
  model = args[1] or "any"
end

local function decisions_body(input)
  return string.format([[{"model":%q,"input":%q,"questions":[
    {"type":"predicate","name":"billing","instructions":"Is this about billing?"},
    {"type":"choice","name":"tone","instructions":"Tone of the customer?","choices":[{"value":"calm"},{"value":"angry","description":"shouting"},{"value":"happy"}]},
    {"type":"score","name":"urgency","instructions":"How urgent?","levels":[{"label":"can wait"},{"label":"this week"},{"label":"today"}]}]}]], model, input)
end

local function chat_body(input, sampled)
  return string.format([[{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":8,"temperature":%s}]],
    model, input, sampled and "0.8" or "0")
end

local function systemone_body(state)
  return string.format([[{"model":"any","state":%q,"questions":{
    "billing":{"type":"noul","instructions":"Is this about billing?"},
    "urgency":{"type":"score","instructions":"How urgent?","criteria":["can wait","this week","today"]}}}]], state)
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  local r = math.random()
  local input = inputs[math.random(#inputs)]
  if r < 1 / 3 then
    return wrk.format("POST", "/v1/decisions", headers, decisions_body(input))
  elseif r < 2 / 3 then
    return wrk.format("POST", "/v1/chat/completions", headers, chat_body(input, r < 0.5))
  end
  return wrk.format("POST", "/v1/systemone", headers, systemone_body(input))
end
