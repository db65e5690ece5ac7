-- Frequency cap of one (recipient, scope), atomically (see
-- include/pacer/frequency_cap_redis.h). KEYS[1] holds the sends still in the
-- window as 6-byte big-endian millisecond stamps, oldest first.
--   decide:  ARGV = 'd', now_ms, limit, window_ms
--            -> {1, now_ms, in_window} (counted) or {0, allowed_at_ms, in_window}
--   release: ARGV = 'r', stamp_ms -> 1 if one send stamped so was removed, else 0
-- The steps are those of src/core/rules/cap_window.cc; the integration
-- tests compare the two answer by answer. Times are the caller's: Redis's
-- clock only runs the key's expiry, a duration.
local key = KEYS[1]
local packed = redis.call('GET', key) or ''
local stamps = {}
for i = 1, #packed - 5, 6 do
  local a, b, c, d, e, f = string.byte(packed, i, i + 5)
  stamps[#stamps + 1] = ((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f
end

local function pack(list)
  local parts = {}
  local bytes = {}
  for i = 1, #list do
    local t = list[i]
    for j = 6, 1, -1 do
      bytes[j] = t % 256
      t = (t - bytes[j]) / 256
    end
    parts[i] = string.char(bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6])
  end
  return table.concat(parts)
end

if ARGV[1] == 'r' then
  local stamp = tonumber(ARGV[2])
  for i = 1, #stamps do
    if stamps[i] == stamp then
      table.remove(stamps, i)
      if #stamps == 0 then
        redis.call('DEL', key)
      else
        redis.call('SET', key, pack(stamps), 'KEEPTTL')
      end
      return 1
    end
  end
  return 0
end

local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local from = now - window
local live = {}
for i = 1, #stamps do
  if stamps[i] > from then live[#live + 1] = stamps[i] end
end
local k = #live
if k >= limit then
  -- Allowed once the limit-th newest send has left the window.
  return {0, live[k - limit + 1] + window, k}
end
local pos = k + 1
while pos > 1 and live[pos - 1] > now do pos = pos - 1 end
table.insert(live, pos, now)
-- Expire when the newest send leaves the window: nothing counts after that.
redis.call('SET', key, pack(live), 'PX', live[#live] + window - now)
return {1, now, k + 1}
