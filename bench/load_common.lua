-- load_common.lua: what the wrk load scripts (load_mixed.lua, load_openai.lua)
-- share: an id per wrk thread (seeding its request mix), the count of
-- non-200 replies, and the one LOAD summary line load_run.sh reads.
-- Loaded with dofile from the script's own folder, in the main Lua state
-- (setup, done) and in each thread's (init, response).
local M = {}
local threads = {}
local counter = 0

function M.setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function M.init()
  errors = 0
  math.randomseed(id * 7919 + 17)
end

function M.response(status, hdrs, body)
  if status ~= 200 then
    errors = errors + 1
  end
end

function M.done(summary, latency, requests)
  local errs = 0
  for _, t in ipairs(threads) do
    errs = errs + t:get("errors")
  end
  io.write(string.format("LOAD requests=%d non200=%d socket_errors=%d timeouts=%d rps=%.2f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f\n",
    summary.requests, errs, summary.errors.connect + summary.errors.read + summary.errors.write,
    summary.errors.timeout, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000))
end

return M
