-- Pacer quota lease: hierarchical token buckets, one atomic grant.
--
-- KEYS[i]          bucket i of n (a hash: t = micro-tokens held, ts = last
--                  refill, microseconds of Redis TIME). All keys share one
--                  hash tag.
-- KEYS[n + 1]      only with the adaptive arguments: the scope's adaptive
--                  state (a hash: r = effective rate, good, thr, ts, dec =
--                  last decrease, pu = paused until; times in microseconds).
-- ARGV[1]          tokens wanted (integer >= 0)
-- ARGV[2]          '1': a missing bucket starts full; '0': it starts empty
-- ARGV[1 + 2i]     rate of bucket i, tokens per second (>= 0)
-- ARGV[2 + 2i]     burst of bucket i, tokens (< 1 counts as 1)
-- then, optionally, 7 adaptive arguments (ARGV[3 + 2n] ...):
--                  the adaptive bucket's index (1-based), floor, decrease,
--                  fast climb and plateau climb (fractions of the ceiling per
--                  second), hold (microseconds), and a throttle report: the
--                  pause in microseconds, or -1 for none.
--
-- Reads Redis's own clock, refills every bucket at its (possibly new) rate,
-- clips it to its (possibly new) burst, grants g = min(wanted, whole tokens in
-- every bucket), takes g from each, and sets each key to expire once it would
-- be full again (an expired bucket comes back full, which is what it would
-- hold anyway). Returns {g, microseconds until every bucket holds a whole
-- token again (-1: never, a rate is 0), microseconds until the binding bucket
-- (the one with the fewest whole tokens before the grant, which set g) is
-- full again and would start to waste what accrues (-1: it does not refill),
-- the binding bucket's index (0-based), the adaptive bucket's effective rate
-- in thousandths of a token per second (-1: none), and the microseconds the
-- scope stays paused (0: not paused)}: integers only, because replies turn
-- Lua fractions into truncated integers.
--
-- The adaptive rate is AdaptiveRate's (include/pacer/adaptive_rate.h), kept
-- here so every worker shares it: the bucket's configured rate is the
-- ceiling; a throttle report multiplies the rate by `decrease` (at most once
-- per hold, whoever reports), down to the floor, and pauses the scope; out of
-- a pause the rate climbs fast up to 'good' (a guess at the last rate that
-- worked), slowly on the plateau up to 'thr' (where the provider said no),
-- and fast again above it, never above the ceiling; a throttle within 2% of
-- the ceiling has no plateau. The bucket's burst
-- shrinks with the rate. While the scope is paused nothing is granted.
local U = 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * U + tonumber(t[2])
local want = tonumber(ARGV[1])
if want == nil or want < 0 or #KEYS == 0 then
  return redis.error_reply('ERR pacer lease: bad arguments')
end
local nlev = #KEYS
local adaptive = nil
if #ARGV == 2 + 2 * nlev - 2 + 7 and nlev >= 2 then
  nlev = nlev - 1
  adaptive = {
    level = tonumber(ARGV[3 + 2 * nlev]), floor = tonumber(ARGV[4 + 2 * nlev]),
    dec = tonumber(ARGV[5 + 2 * nlev]), fast = tonumber(ARGV[6 + 2 * nlev]),
    plat = tonumber(ARGV[7 + 2 * nlev]), hold = tonumber(ARGV[8 + 2 * nlev]),
    throttle = tonumber(ARGV[9 + 2 * nlev]) }
  for _, v in pairs({'level', 'floor', 'dec', 'fast', 'plat', 'hold', 'throttle'}) do
    local x = adaptive[v]
    if x == nil or x ~= x then return redis.error_reply('ERR pacer lease: bad adaptive argument ' .. v) end
  end
  if adaptive.level < 1 or adaptive.level > nlev then return redis.error_reply('ERR pacer lease: bad adaptive level') end
  if adaptive.dec < 0.01 then adaptive.dec = 0.01 elseif adaptive.dec > 0.99 then adaptive.dec = 0.99 end
elseif #ARGV ~= 2 + 2 * nlev then
  return redis.error_reply('ERR pacer lease: bad arguments')
end
local fill_new = ARGV[2] == '1'
local grant = math.floor(want)

-- The adaptive state: read, climbed to now, decreased on a report, written.
local eff_milli, paused_us = -1, 0
local eff_rate, eff_burst = nil, nil
if adaptive then
  local ceiling = tonumber(ARGV[1 + 2 * adaptive.level])
  local cburst = tonumber(ARGV[2 + 2 * adaptive.level])
  if ceiling ~= nil and ceiling == ceiling and ceiling > 0 and cburst ~= nil and cburst == cburst then
    local akey = KEYS[nlev + 1]
    local h = redis.call('HMGET', akey, 'r', 'good', 'thr', 'ts', 'dec', 'pu')
    local st = { r = tonumber(h[1]), good = tonumber(h[2]), thr = tonumber(h[3]), ts = tonumber(h[4]),
                 dec = tonumber(h[5]), pu = tonumber(h[6]) }
    if st.r == nil or st.good == nil or st.thr == nil or st.ts == nil or st.dec == nil or st.pu == nil then
      st = { r = ceiling, good = ceiling, thr = ceiling, ts = now, dec = -1, pu = now }
    end
    if st.r > ceiling then st.r = ceiling end
    -- climb from the later of the last update and the end of the pause
    if now > st.ts then
      local from = math.max(st.ts, st.pu)
      st.ts = now
      if now > from then
        local dt = (now - from) / U
        local fast, plat = adaptive.fast * ceiling, adaptive.plat * ceiling
        for _ = 1, 4 do
          if dt <= 0 or st.r >= ceiling then break end
          local speed, upto = fast, ceiling
          if st.r < st.good then upto = st.good
          elseif st.r < st.thr and st.thr < 0.98 * ceiling then speed, upto = plat, st.thr end
          if speed <= 0 then break end
          if upto > ceiling then upto = ceiling end
          local need = (upto - st.r) / speed
          if need >= dt then st.r = st.r + speed * dt; break end
          st.r = upto
          dt = dt - need
        end
        if st.r > ceiling then st.r = ceiling end
      end
    end
    if adaptive.throttle >= 0 then
      if st.dec < 0 or now - st.dec >= adaptive.hold then
        st.dec = now
        st.thr = st.r
        st.good = st.r * math.sqrt(adaptive.dec)
        local fl = math.min(math.max(adaptive.floor, 0), ceiling)
        st.r = math.max(fl, st.r * adaptive.dec)
      end
      if now + adaptive.throttle > st.pu then st.pu = now + adaptive.throttle end
    end
    redis.call('HSET', akey, 'r', string.format('%.17g', st.r), 'good', string.format('%.17g', st.good),
      'thr', string.format('%.17g', st.thr), 'ts', string.format('%.0f', st.ts),
      'dec', string.format('%.0f', st.dec), 'pu', string.format('%.0f', st.pu))
    -- Forgotten after an hour idle: it comes back at the ceiling.
    redis.call('PEXPIRE', akey, 3600000 + math.ceil(math.max(st.pu - now, 0) / 1000))
    eff_milli = math.floor(st.r * 1000)
    eff_rate = st.r
    local f = st.r / ceiling
    if f > 1 then f = 1 end
    eff_burst = math.max(1, cburst * f)
    if st.pu > now then
      paused_us = st.pu - now
      return {0, paused_us, paused_us, adaptive.level - 1, eff_milli, paused_us}
    end
  end
end
local rates, caps, held, stamps = {}, {}, {}, {}
local bind, bind_whole = 1, nil
for i = 1, nlev do
  local rate = tonumber(ARGV[1 + 2 * i])
  local burst = tonumber(ARGV[2 + 2 * i])
  if adaptive and i == adaptive.level and eff_rate then rate, burst = eff_rate, eff_burst end
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
for i = 1, nlev do
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
return {grant, wait, full_in, bind - 1, eff_milli, paused_us}
