-- wrk script behind Benchmarks/service. The mode comes from the environment:
--   MODE=get     GET the URL wrk was given (the /healthz and origin floors)
--   MODE=warm    POST /v1/attachments for HOT_URL, the same URL every time (cache hits)
--   MODE=cold    POST /v1/attachments for COLD_URL?c=<ROUND>-<thread>-<n>: a new URL every time (misses;
--                ROUND, set by the harness to a new value for every run, keeps runs from sharing URLs)
--   MODE=mix     one cold request in COLD_EVERY, otherwise one of HOT_COUNT hot URLs
--                (HOT_URL?h=<k>); DELAY_MS (fractional allowed) between a connection's requests sets the rate
--   MODE=distinct POST /v1/attachments for ORIGIN/media/dNNN.jpg?r=<ROUND>-<thread>-<n>, NNN cycling
--                through 001..IMAGES: a new URL every time, the same images over and over
--   MODE=thumbor GET /unsafe/fit-in/320x320/<ORIGIN without http://>/media/dNNN.jpg, NNN cycling the same way
-- FILES, when set, is sent as the body's "files" field ("none": no directory made for the call).
-- In the last two modes every answer is checked: a service answer must say "ready" and carry a
-- thumbnail object (not only a thumbnail time), a thumbor answer must be a JPEG; any other answer
-- is counted under status 0.
-- Every response status is counted; done() prints one line "WRKJSON {...}" for the harness.
local mode = os.getenv("MODE") or "get"
local hot = os.getenv("HOT_URL") or ""
local cold = os.getenv("COLD_URL") or ""
local coldEvery = tonumber(os.getenv("COLD_EVERY") or "20")
local hotCount = tonumber(os.getenv("HOT_COUNT") or "10")
local delayMs = tonumber(os.getenv("DELAY_MS") or "0")
local coldSeparator = cold:find("?", 1, true) and "&" or "?"
local origin = os.getenv("ORIGIN") or ""
local images = tonumber(os.getenv("IMAGES") or "300")
local round = os.getenv("ROUND") or "0"

local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  n = 0
end

local files = os.getenv("FILES") or ""
local filesField = files ~= "" and (',"files":"' .. files .. '"') or ""

local function post(url)
  return wrk.format("POST", "/v1/attachments", { ["Content-Type"] = "application/json" },
                    '{"urls":["' .. url .. '"]' .. filesField .. '}')
end

function request()
  n = n + 1
  if mode == "warm" then
    return post(hot)
  elseif mode == "cold" then
    return post(cold .. coldSeparator .. "c=" .. round .. "-" .. id .. "-" .. n)
  elseif mode == "mix" then
    if n % coldEvery == 0 then
      return post(cold .. coldSeparator .. "c=" .. round .. "-" .. id .. "-" .. n)
    end
    return post(hot .. "?h=" .. (n % hotCount))
  elseif mode == "distinct" then
    return post(string.format("%s/media/d%03d.jpg?r=%s-%d-%d", origin, (n % images) + 1, round, id, n))
  elseif mode == "thumbor" then
    return wrk.format("GET", string.format("/unsafe/fit-in/320x320/%s/media/d%03d.jpg", origin:gsub("^http://", ""),
                                           (n % images) + 1))
  end
  return wrk.format("GET")
end

if delayMs > 0 then
  -- wrk waits whole milliseconds: a fractional DELAY_MS is met on average, each pause rounded
  -- down or up at random in proportion.
  local whole = math.floor(delayMs)
  local fraction = delayMs - whole
  function delay()
    if math.random() < fraction then return whole + 1 end
    return whole
  end
end

local function wrong(status, body)
  if status ~= 200 then return false end
  if mode == "distinct" then
    return not (body:find('"status":"ready"', 1, true) and body:find('"thumbnail":{', 1, true))
  elseif mode == "thumbor" then
    return body:sub(1, 2) ~= "\255\216"
  end
  return false
end

function response(status, headers, body)
  if wrong(status, body) then status = 0 end
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local byStatus = {}
  for _, thread in ipairs(threads) do
    local counts = thread:get("statuses")
    for status, count in pairs(counts) do
      byStatus[status] = (byStatus[status] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(byStatus) do
    table.insert(parts, string.format('"%d": %d', status, count))
  end
  local errors = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "seconds": %.3f, "p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f, ' ..
    '"socket_errors": %d, "statuses": {%s}}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, latency.max / 1e3,
    errors.connect + errors.read + errors.write + errors.timeout, table.concat(parts, ", ")))
end
