-- wrk script: POST push events to the collector, each with an eventId of its own: a random
-- (version 4) UUID in lower case, as PushTrackClient makes them (DESIGN.md: "client-generated id
-- (UUID)"), so that report keys land all over their index as the field's do, not in order.
-- Environment: PT_KEY (write key), PT_BATCH (events per request, 1 = a single event object),
-- PT_MESSAGES (distinct messageIds, 97; 1 = one message blasted to every device),
-- PT_DEVICES (distinct deviceIds, 1000000; a few dozen make most reports update a stored pair),
-- PT_RATE (requests/s offered by all connections together, 0 = flat out; wrk's threads, PT_THREADS
-- (2), each send on a fixed schedule of PT_RATE / PT_THREADS: a steady offered rate whatever the
-- latency, where a pause per connection offered more as the latency fell),
-- PT_CAMPAIGNS=0 (no campaignId in the events: their messages' rows, unregistered, are never
-- settled, so every group commit runs the `messages` statement),
-- PT_STATUSES=1 (count responses by status, and 503/429 without Retry-After; costs a Lua call
-- per response, so only the overload benchmark sets it).
local key = os.getenv("PT_KEY")
local batch = tonumber(os.getenv("PT_BATCH") or "1")
local rate = tonumber(os.getenv("PT_RATE") or "0")
local interval_ms = rate > 0 and 1000 * tonumber(os.getenv("PT_THREADS") or "2") / rate or 0
local messages = tonumber(os.getenv("PT_MESSAGES") or "97")
local devices = tonumber(os.getenv("PT_DEVICES") or "1000000")
local campaigns = os.getenv("PT_CAMPAIGNS") ~= "0"
local counter = 0
local threads = {}

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

function init(args)
   -- Seeded from the kernel: threads and runs that start in the same second still draw
   -- different ids (a repeated eventId would count as a retry, not a new report).
   local urandom = assert(io.open("/dev/urandom", "rb"))
   local bytes = urandom:read(6)
   urandom:close()
   local seed = 0
   for i = 1, #bytes do seed = seed * 256 + bytes:byte(i) end
   math.randomseed(seed)
end

-- A random version 4 UUID, e.g. 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed.
local function uuid()
   local r = math.random
   return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x", r(0, 0xffff), r(0, 0xffff),
      r(0, 0xffff), r(0, 0xfff), r(0x8000, 0xbfff), r(0, 0xffff), r(0, 0xffff), r(0, 0xffff))
end

local function event(n)
   local msg = n % messages
   local device = math.random(1, devices)
   local category = (n % 5 == 0) and "push_click" or "push_arrival"
   local active = (n % 3 == 0) and "true" or "false"
   local campaign = campaigns and string.format('"campaignId":"c%d",', msg % 7) or ""
   return string.format(
      '{"pageId":"push","category":"%s","action":"view","label":"push_Sale %d",' ..
      '"messageId":"m%d",%s"deviceId":"dev%d","appActive":%s,' ..
      '"source":"extension","eventId":"%s","timestamp":%d000}',
      category, msg, msg, campaign, device, active, uuid(), os.time())
end

function request()
   local body
   if batch == 1 then
      counter = counter + 1
      body = event(counter)
   else
      local parts = {}
      for i = 1, batch do
         counter = counter + 1
         parts[i] = event(counter)
      end
      body = '{"sentAt":' .. os.time() .. '000,"events":[' .. table.concat(parts, ",") .. ']}'
   end
   return wrk.format("POST", "/customer-track/upload-event", {
      ["Content-Type"] = "application/json",
      ["X-App-Key"] = key,
      ["Device-Info"] = '{"platform":"ios","os_version":"17.5","is_notification_enabled":true}',
      ["Version"] = "3.2.1",
      ["Accept-Language"] = "en-US;q=1.0",
   }, body)
end

-- The monotonic clock in milliseconds (wrk's Lua is LuaJIT, which reaches libc through ffi).
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } pt_timespec;
int clock_gettime(int clock_id, pt_timespec *tp);
]]
local timespec = ffi.new("pt_timespec")
local function now_ms()
   ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
   return tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6
end

-- Called before each request of this thread: the wait until its next slot on the schedule. A
-- slot already past is taken now and the schedule restarts from there, so a slow stretch is not
-- followed by a burst that makes up for it.
local next_slot = 0
function delay()
   if interval_ms == 0 then
      return 0
   end
   local now = now_ms()
   if next_slot < now then
      next_slot = now
   end
   local wait = next_slot - now
   next_slot = next_slot + interval_ms
   return wait
end

statuses = {}
no_retry_after = 0
if os.getenv("PT_STATUSES") == "1" then
   function response(status, headers, body)
      statuses[status] = (statuses[status] or 0) + 1
      if (status == 503 or status == 429) and headers["Retry-After"] == nil then
         no_retry_after = no_retry_after + 1
      end
   end
end

-- One line of figures the driver script reads: requests/s, latency percentiles (ms), errors.
function done(summary, latency, requests)
   local seconds = summary.duration / 1e6
   local errors = summary.errors.status + summary.errors.connect + summary.errors.read +
      summary.errors.write + summary.errors.timeout
   io.write(string.format(
      "RESULT requests=%d seconds=%.3f rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d non2xx=%d\n",
      summary.requests, seconds, summary.requests / seconds,
      latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
      latency.max / 1000, errors, summary.errors.status))
   if os.getenv("PT_STATUSES") == "1" then
      local total, missing = {}, 0
      for _, thread in ipairs(threads) do
         for status, count in pairs(thread:get("statuses")) do
            total[status] = (total[status] or 0) + count
         end
         missing = missing + thread:get("no_retry_after")
      end
      local parts = {}
      for status, count in pairs(total) do
         table.insert(parts, string.format("s%d=%d", status, count))
      end
      table.sort(parts)
      io.write("STATUSES " .. table.concat(parts, " ") ..
         string.format(" no_retry_after=%d timeouts=%d connect_errors=%d read_errors=%d\n",
            missing, summary.errors.timeout, summary.errors.connect, summary.errors.read))
   end
end
