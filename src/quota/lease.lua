-- Pacer quota lease: hierarchical token buckets, one atomic grant.
--
-- KEYS[i]          bucket i (a hash: t = micro-tokens held, ts = last refill,
--                  microseconds of Redis TIME). All keys share one hash tag.
-- ARGV[1]          tokens wanted (integer >= 0)
-- ARGV[2]          '1': a missing bucket starts full; '0': it starts empty
-- ARGV[1 + 2i]     rate of bucket i, tokens per second (>= 0)
-- ARGV[2 + 2i]     burst of bucket i, tokens (< 1 counts as 1)
--
-- Reads Redis's own clock, refills every bucket at its (possibly new) rate,
-- clips it to its (possibly new) burst, grants g = min(wanted, whole tokens in
-- every bucket), takes g from each, and sets each key to expire once it would
-- be full again (an expired bucket comes back full, which is what it would
-- hold anyway). Returns {g, microseconds until every bucket holds a whole
-- token again (-1: never, a rate is 0), microseconds until the binding bucket
-- (the one with the fewest whole tokens before the grant, which set g) is
-- full again and would start to waste what accrues (-1: it does not refill),
-- and the binding bucket's index (0-based)}: integers only, because replies
-- turn Lua fractions into truncated integers.
local U = 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * U + tonumber(t[2])
local want = tonumber(ARGV[1])
if want == nil or want < 0 or #ARGV ~= 2 + 2 * #KEYS or #KEYS == 0 then
  return redis.error_reply('ERR pacer lease: bad arguments')
end
local fill_new = ARGV[2] == '1'
local grant = math.floor(want)
local rates, caps, held, stamps = {}, {}, {}, {}
local bind, bind_whole = 1, nil
for i = 1, #KEYS do
  local rate = tonumber(ARGV[1 + 2 * i])
  local burst = tonumber(ARGV[2 + 2 * i])
  if rate == nil or burst == nil or rate ~= rate or burst ~= burst or rate < 0 or burst < 0 or rate > 1e9 or burst > 1e12 then
    return redis.error_reply('ERR pacer lease: bad rate or burst for ' .. KEYS[i])
  end
  if burst < 1 then burst = 1 end
  local cap = math.floor(burst * U)
  local h = redis.call('HMGET', KEYS[i], 't', 'ts')
  local tokens, ts = tonumber(h[1]), tonumber(h[2])
  if tokens == nil or ts == nil then
    if fill_new then tokens = cap else tokens = 0 end
    ts = now
  end
  -- rate tokens/s is exactly rate micro-tokens per microsecond. A clock that
  -- went back (failover) adds nothing and does not move ts back.
  if now > ts then
    tokens = tokens + (now - ts) * rate
    ts = now
  end
  if tokens > cap then tokens = cap end
  tokens = math.floor(tokens)
  if rate == 0 then grant = 0 end
  local whole = math.floor(tokens / U)
  if rate == 0 then whole = -1 end
  if bind_whole == nil or whole < bind_whole then bind, bind_whole = i, whole end
  if whole < grant then grant = math.max(whole, 0) end
  rates[i], caps[i], held[i], stamps[i] = rate, cap, tokens, ts
end
local wait = 0
local full_in = -1
for i = 1, #KEYS do
  local left = held[i] - grant * U
  redis.call('HSET', KEYS[i], 't', string.format('%.0f', left), 'ts', string.format('%.0f', stamps[i]))
  local rate = rates[i]
  local ttl = 60000
  if rate > 0 then ttl = math.ceil((caps[i] - left) / rate / 1000) + 1000 end
  redis.call('PEXPIRE', KEYS[i], ttl)
  if i == bind and rate > 0 then full_in = math.floor((caps[i] - left) / rate) end
  if rate == 0 then
    wait = -1
  elseif left < U and wait >= 0 then
    local w = math.ceil((U - left) / rate)
    if w > wait then wait = w end
  end
end
return {grant, wait, full_in, bind - 1}
