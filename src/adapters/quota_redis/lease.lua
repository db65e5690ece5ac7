-- Pacer quota lease: hierarchical token buckets, one atomic grant, with
-- tokens granted ahead of time, a shared adaptive rate and circuit breaker,
-- and a count of the workers asking. Redis's own TIME is the clock.
--
-- KEYS[1..n]   bucket i (a hash: tat = when, in microseconds of Redis TIME,
--              the bucket is full again; later than now + burst / rate when it
--              owes tokens to grants made ahead)
-- then, only with an adaptive level (ARGV[7] > 0):
--              the scope's state (a hash): the adaptive rate (r, lim, ts, dec,
--              pu, sp, we, cf and cr: the limit and the rate before the
--              last round of judged cuts, ct: when that round began, cs and
--              cn: the sum and count of its measured keeps, cp: its pause, us), the circuit breaker (bws, bok, bf, bpok, bpf,
--              bou, bn) and the throttle judge (jw: the worker that judges, jt: when it last reported answers,
--              us; nz: the noise level it learned; ar: every worker's last accepted and throttled answers
--              per second and its throttles of one recipient in its last 5 s,
--              'id=accepted,throttled,when,recipient;' each, in thousandths and us; an entry without the
--              recipient figure counts 0)
-- then, only with priority (ARGV[8] > 0): the scope's classes (a hash: rank ->
--              when it last asked for tokens, us) and, when ARGV[8] is 2, this
--              class's own bucket (its share of the shared level while lower
--              classes ask, see LeasePriority in include/pacer/quota.h)
-- then, only with a worker id (ARGV[5] not '0'):
--              the scope's workers (a sorted set: worker id -> last ask, us)
-- All keys share one hash tag (one Redis Cluster slot). Keys are passed only
-- when used: during a slot migration a key that does not exist yet would make
-- the importing node refuse the whole call.
--
-- ARGV[1]  tokens wanted (integer >= 0)
-- ARGV[2]  '1': a missing bucket starts full; '0': it starts empty
-- ARGV[3]  lookahead, microseconds: a bucket may owe up to rate * lookahead
-- ARGV[4]  min grant: grant nothing rather than fewer (a smaller want is
--          granted in full or not at all)
-- ARGV[5]  the asking worker's id ('0': not counted)
-- ARGV[6]  debt: tokens sent without the quota, taken from every bucket first
-- ARGV[7]  the adaptive level, 1-based (0: none)
-- ARGV[8]  priority keys: 0 (no priority), 1 (the classes) or 2 (and the class's bucket)
-- ARGV[9 + 2(i-1)], ARGV[10 + 2(i-1)]   rate (tokens/s) and burst of bucket i
-- then, with an adaptive level, 20 more: floor, decrease, hold fraction,
--   fast climb (a fraction of the ceiling per second), probe time (us), hold
--   (us), a throttle report (pause in us, or -1), answers ok and faults since
--   the worker's last report, and the breaker's threshold, minimum answers,
--   window (us), cooldown (us) and longest cooldown (us); then a judged
--   ceiling's keep in millionths (with the throttle report: the rate comes
--   down to keep times itself, AdaptiveRate::onCapacity; 0: the fixed
--   decrease) and a restore in millionths (> 0: the last judged cut was
--   noise, in whole or in part: the limit goes back to the rate at the cut
--   times it, AdaptiveRate::restoreLimit; 0: none), and the throttle noise
--   level the asking worker's judge learned, in millionths (-1: none; kept
--   only from the worker that judges), and the asking worker's own accepted
--   and throttled answers per second over its last clean second
--   (AcceptedMeter), in thousandths (-1: not known), and its throttles of one
--   recipient (APNs TooManyRequests) over its last 5 s (the meter's recipient
--   window), in thousandths (always known).
-- then, with priority, 7 more: the shared level (1-based), this class's rank
--   (0 highest), the floor, the lower lookahead (us), the top lookahead (us),
--   the window in which a class counts as asking (us) and how long a class
--   that asked is remembered (us).
--
-- Grant: each bucket is refilled at its rate (the adaptive level at its
-- effective rate, its burst scaled down with it) and clipped to its burst;
-- g = min(wanted, whole tokens each bucket holds plus rate * lookahead); g
-- below the min grant becomes 0; g is taken from every bucket. A bucket that
-- goes below zero owes tokens: later grants start after them. Returns
--   {g, next_us, full_us, binding (0-based), effective rate in thousandths
--    (-1: none), paused_us, start (micro-tokens) and schedule rate (micro-
--    tokens per second): token k of the grant is due (k - start) / rate from
--    now (start is negative when the buckets owe tokens to earlier grants),
--    active workers, breaker open (0/1), judge (1: this worker judges the
--    scope's throttles for all: the one that judged last, until it has
--    reported no answers for two seconds, then the next to report some;
--    always 1 without an adaptive level or a worker id),
--    the judge's noise level in millionths, and the provider's accepted and
--    throttled answers per second in thousandths: every active worker's last
--    report summed (-1: one is not known, or fewer workers reported in the
--    last two seconds than are asking; the script only sums), and their
--    throttles of one recipient, summed over the workers that reported in
--    the last two seconds (known even when the others are not)}
-- integers only, because replies turn Lua fractions into truncated integers.
-- A level the quota cannot hold gets the typed refusal {-1, code, level
-- (0-based)} instead, before anything is taken: code 1, a rate or burst that
-- is not a number in range; code 2, a rate so small that refilling the burst
-- outlasts the longest key lifetime (MAX_TTL_MS). Every TTL handed to PEXPIRE
-- is a whole number of milliseconds from 1 to MAX_TTL_MS.
-- next_us: granted nothing: until the min grant would fit; else until every
-- bucket holds a whole token (-1: never, a rate is 0). full_us: until the
-- binding bucket is full again (-1: it does not refill).
--
-- The adaptive rate is AdaptiveRate's (include/pacer/adaptive_rate.h) and
-- the breaker is CircuitBreaker's (include/pacer/circuit_breaker.h), kept
-- here so that every worker shares them.
local U = 1000000
local MAX_TTL_MS = 1e15  -- about 31,700 years; exact as a Lua number, far below Redis's own limit
local function pexpire(key, ms)
  ms = math.ceil(ms)
  if ms ~= ms or ms < 1 then ms = 1 elseif ms > MAX_TTL_MS then ms = MAX_TTL_MS end
  redis.call('PEXPIRE', key, string.format('%d', ms))
end
-- Why a level's rate (tokens/s) and burst cannot be held: 1 or 2 as above; nil: they can.
local function unholdable(rate, burst)
  if rate == nil or burst == nil or rate ~= rate or burst ~= burst or rate < 0 or burst < 0 or rate > 1e9
      or burst > 1e12 then
    return 1
  end
  if rate > 0 and math.max(burst, 1) * 1000 / rate > MAX_TTL_MS then return 2 end
  return nil
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * U + tonumber(t[2])
local counted = ARGV[5] ~= '0' and ARGV[5] ~= ''
local alevel_arg = tonumber(ARGV[7])
local npk = tonumber(ARGV[8])
if npk == nil or npk < 0 or npk > 2 then return redis.error_reply('ERR pacer lease: bad arguments') end
local nlev = #KEYS - npk
if counted then nlev = nlev - 1 end
if alevel_arg ~= nil and alevel_arg > 0 then nlev = nlev - 1 end
local skey_index, wkey_index = nlev + 1, #KEYS
local ckey_index = nlev + 1
if alevel_arg ~= nil and alevel_arg > 0 then ckey_index = nlev + 2 end
local want = tonumber(ARGV[1])
local ahead = tonumber(ARGV[3])
local min_grant = tonumber(ARGV[4])
local debt = tonumber(ARGV[6])
local alevel = tonumber(ARGV[7])
if nlev < 1 or want == nil or want < 0 or ahead == nil or ahead < 0 or min_grant == nil or alevel == nil
    or alevel < 0 or alevel > nlev or debt == nil or debt < 0 then
  return redis.error_reply('ERR pacer lease: bad arguments')
end
local nadaptive = 0
if alevel > 0 then nadaptive = 20 end
local npri = 0
if npk > 0 then npri = 7 end
if #ARGV ~= 8 + 2 * nlev + nadaptive + npri then return redis.error_reply('ERR pacer lease: bad arguments') end
local fill_new = ARGV[2] == '1'
want = math.floor(want)
for i = 1, nlev do
  local code = unholdable(tonumber(ARGV[9 + 2 * (i - 1)]), tonumber(ARGV[10 + 2 * (i - 1)]))
  if code then return {-1, code, i - 1} end
end

-- The workers asking for this scope in the last two seconds.
local active = 0
if counted then
  local wkey = KEYS[wkey_index]
  redis.call('ZADD', wkey, now, ARGV[5])
  redis.call('ZREMRANGEBYSCORE', wkey, '-inf', now - 2 * U)
  pexpire(wkey, 10000)
  active = redis.call('ZCARD', wkey)
end

local function num(i)
  local x = tonumber(ARGV[i])
  if x == nil or x ~= x then return nil end
  return x
end

-- The adaptive rate and breaker: read, brought to now, reports applied, written.
local eff_milli, paused_us, open = -1, 0, 0
local judge, noise_micro = 1, 0
local wide_acc, wide_thr, wide_rt = -1, -1, 0
local eff_rate, eff_burst = nil, nil
if alevel > 0 then
  local base = 8 + 2 * nlev
  local a = {}
  local names = {'floor', 'dec', 'holdf', 'fast', 'probe', 'hold', 'throttle', 'ok', 'faults',
                 'bthr', 'bmin', 'bwin', 'bcool', 'bmax', 'keep', 'restore', 'noise', 'acc', 'thr',
                 'rthr'}
  for i, name in ipairs(names) do
    a[name] = num(base + i)
    if a[name] == nil then return redis.error_reply('ERR pacer lease: bad adaptive argument ' .. name) end
  end
  if a.dec < 0.01 then a.dec = 0.01 elseif a.dec > 0.99 then a.dec = 0.99 end
  if a.holdf < 0.01 then a.holdf = 0.01 elseif a.holdf > 1 then a.holdf = 1 end
  local ceiling = num(9 + 2 * (alevel - 1))
  local cburst = num(10 + 2 * (alevel - 1))
  if ceiling ~= nil and ceiling > 0 and cburst ~= nil then
    local skey = KEYS[skey_index]
    local h = redis.call('HMGET', skey, 'r', 'lim', 'ts', 'dec', 'pu', 'sp', 'we', 'bws', 'bok', 'bf', 'bpok', 'bpf',
      'bou', 'bn', 'cf', 'cr', 'ct', 'cs', 'cn', 'cp', 'jt', 'nz', 'jw', 'ps', 'ar')
    local st = {}
    for i, name in ipairs({'r', 'lim', 'ts', 'dec', 'pu', 'sp', 'we', 'bws', 'bok', 'bf', 'bpok', 'bpf', 'bou', 'bn',
                           'cf', 'cr', 'ct', 'cs', 'cn', 'cp', 'jt', 'nz'}) do
      st[name] = tonumber(h[i])
    end
    st.jw = h[23]
    st.ps = tonumber(h[24])
    if st.ps == nil or st.ps <= 0 then st.ps = 1 end
    if st.jt == nil or not st.jw then st.jt, st.jw = 0, '' end
    if st.nz == nil then st.nz = 0 end
    -- One worker judges the scope's throttles for all (ThrottleJudge): the
    -- one that judged last, until it has reported no answers for two
    -- seconds; then the next to report answers.
    if counted then
      local answered = a.ok + a.faults > 0
      if st.jw == ARGV[5] then
        if answered then st.jt = now end
      elseif answered and (st.jw == '' or now - st.jt > 2 * U) then
        st.jw, st.jt = ARGV[5], now
      end
      if st.jw ~= ARGV[5] then judge = 0 end
      if judge == 1 and a.noise >= 0 then st.nz = math.min(a.noise, U) / U end
    end
    noise_micro = math.floor(st.nz * U)
    -- Every worker's last rates (AcceptedMeter), this one's replaced: kept
    -- for two seconds and summed. A request without a worker id leaves them.
    local ar = h[25] or ''
    if counted then
      local parts, sa, sth, srt, n, known = {}, 0, 0, 0, 0, true
      for id, ea, et, ets, ert in string.gmatch(h[25] or '', '([^=;]+)=(-?%d+),(-?%d+),(%d+),?(%d*);') do
        if id ~= ARGV[5] and now - tonumber(ets) <= 2 * U then
          ert = tonumber(ert) or 0
          parts[#parts + 1] = id .. '=' .. ea .. ',' .. et .. ',' .. ets .. ',' .. ert .. ';'
          ea, et = tonumber(ea), tonumber(et)
          if ea < 0 or et < 0 then known = false end
          sa, sth, srt, n = sa + ea, sth + et, srt + ert, n + 1
        end
      end
      local ma, mt, mrt = math.floor(a.acc), math.floor(a.thr), math.max(0, math.floor(a.rthr))
      if ma < 0 or mt < 0 then ma, mt, known = -1, -1, false end
      parts[#parts + 1] = ARGV[5] .. '=' .. string.format('%d,%d,%.0f,%d;', ma, mt, now, mrt)
      sa, sth, srt, n = sa + ma, sth + mt, srt + mrt, n + 1
      ar = table.concat(parts)
      if known and n >= active then wide_acc, wide_thr = sa, sth end
      wide_rt = srt
    end
    if st.cf == nil or st.cr == nil or st.ct == nil then st.cf, st.cr, st.ct = 0, 0, 0 end
    if st.cs == nil or st.cn == nil then st.cs, st.cn = 0, 0 end
    if st.cp == nil then st.cp = 0 end
    if st.r == nil or st.lim == nil or st.ts == nil or st.dec == nil or st.pu == nil or st.sp == nil
        or st.we == nil then
      st.r, st.lim, st.ts, st.dec, st.pu, st.sp, st.we = ceiling, ceiling, now, -1, now - U, 0, 0
    end
    if st.bws == nil or st.bok == nil or st.bf == nil or st.bpok == nil or st.bpf == nil or st.bou == nil
        or st.bn == nil then
      st.bws, st.bok, st.bf, st.bpok, st.bpf, st.bou, st.bn = now, 0, 0, 0, 0, now, 0
    end
    if st.lim > ceiling or st.lim <= 0 then st.lim = ceiling end
    if st.r > ceiling then st.r = ceiling end
    local floor = math.min(math.max(a.floor, 0), ceiling)
    if st.r < floor then st.r = floor end
    -- climb, from the later of the last update and the end of the pause,
    -- integrating the rate over the first second after the pause (sp)
    if now > st.ts then
      local from = math.max(st.ts, st.pu)
      st.ts = now
      if now > from then
        local dt = (now - from) / U
        local counted = 1 - (from - st.pu) / U
        if counted < 0 then counted = 0 elseif counted > dt then counted = dt end
        for _ = 1, 64 do
          if dt <= 0 or st.r >= ceiling then break end
          local hold_point = math.min(ceiling, st.lim * a.holdf)
          local band_top = math.min(ceiling, st.lim * (1 + 2 * (1 - a.holdf)))  -- the slow probe goes on past the limit
          if st.r >= hold_point and st.r >= band_top and a.probe > 0 and band_top > 0 then
            -- past the band without a throttle: the limit is at least this;
            -- a new probe from here, four times as quick as the last
            st.lim = band_top
            st.ps = math.max(st.ps / 4, 1 / 256)
          else
            local speed, upto = a.fast * ceiling, ceiling
            if st.r < hold_point then upto = hold_point
            else
              if a.probe > 0 then speed = (st.lim - hold_point) / (a.probe * st.ps / U) end
              if band_top > st.r then upto = band_top end
            end
            if speed <= 0 then break end
            local step = math.min((upto - st.r) / speed, dt)
            local c = math.min(counted, step)
            st.sp = st.sp + st.r * c + speed * c * c / 2
            counted = counted - c
            if step >= dt then st.r = st.r + speed * dt; dt = 0; break end
            st.r = upto
            dt = dt - step
          end
        end
        if st.r > ceiling then st.r = ceiling end
        st.sp = st.sp + st.r * math.min(counted, dt)
      end
    end
    local function decrease(learn)
      if st.dec >= 0 and now - st.dec < a.hold then return end
      st.dec = now
      local d = a.dec
      if st.r < st.lim * a.holdf then d = a.dec * a.dec end  -- the limit dropped: drop harder
      local base = st.r
      if learn then
        -- within a second of a pause, what was sent since is what the
        -- provider's one-second window held when it refused
        if now >= st.pu and now - st.pu < U and st.we == 1 and st.sp > 0 and st.sp < st.r then
          st.lim = st.sp
        else
          st.lim = st.r
        end
        if st.lim < base then base = st.lim end
      end
      st.r = math.max(floor, base * d)
    end
    local function pause_until(u)
      if u > st.pu then
        st.pu, st.sp = u, 0
        if u - now >= U then st.we = 1 else st.we = 0 end  -- a second or more empties the provider's window
      end
    end
    -- a judged ceiling: the provider takes keep of what it is sent; cuts
    -- within 5 s of the first of a round (every worker judges the same
    -- moment, and a judge's second word comes two periods after its first)
    -- do not compound: the mean of the round's measured keeps (below 1; 1 is
    -- a judge's first step back) applies to the rate before it, and only a
    -- longer pause than the round's first pauses again (returns the pause)
    local function capacity(keep, pause)
      if keep > 1 then keep = 1 end
      local measured = keep < 1
      if st.cf > 0 and now - st.ct < 5 * U then
        if pause > st.cp then st.cp = pause else pause = 0 end
        if measured then
          st.cs, st.cn = st.cs + keep, st.cn + 1
          st.lim = math.max(floor, st.cr * st.cs / st.cn)
        end
        st.r = math.min(st.r, math.max(floor, st.lim * a.holdf))
      elseif st.dec < 0 or now - st.dec >= a.hold then
        st.cf, st.cr, st.ct, st.cp = st.lim, st.r, now, pause
        if measured then st.cs, st.cn = keep, 1 else st.cs, st.cn = 0, 0 end
        st.lim = math.max(floor, st.r * keep)
        -- the ceiling found again where it was, by the probe: probe less often
        if measured and st.cr >= st.cf * a.holdf and math.abs(st.lim - st.cf) <= 0.03 * st.cf then
          st.ps = math.min(2 * st.ps, 4)
        else
          st.ps = 1
        end
        st.r = math.max(floor, st.lim * a.holdf)
      end
      st.dec = now
      return pause
    end
    if a.throttle >= 0 then
      local pause = a.throttle
      if a.keep > 0 then pause = capacity(a.keep / U, pause) else decrease(true) end
      pause_until(now + pause)
    end
    if a.restore > 0 then
      local back = math.min(st.cf, st.cr * math.min(a.restore / U, 1), ceiling)
      if back > st.lim then st.lim = back end
      st.ps = 1
      st.cs, st.cn = 0, 0  -- later cuts of the round are averaged without the noise
    end
    -- the breaker: roll the windows, count, judge
    local win = math.max(a.bwin, 1)
    if now >= st.bws + win then
      local n = math.floor((now - st.bws) / win)
      if n >= 2 then st.bpok, st.bpf = 0, 0 else st.bpok, st.bpf = st.bok, st.bf end
      st.bok, st.bf = 0, 0
      st.bws = st.bws + n * win
    end
    if now >= st.bou + win then st.bn = 0 end
    if a.ok > 0 or a.faults > 0 then
      st.bok = st.bok + a.ok
      st.bf = st.bf + a.faults
      if now >= st.bou then
        local k = 1 - (now - st.bws) / win
        if k < 0 then k = 0 elseif k > 1 then k = 1 end
        local total = st.bok + st.bf + (st.bpok + st.bpf) * k
        local f = st.bf + st.bpf * k
        if total >= math.max(1, a.bmin) and f >= a.bthr * total then
          st.bn = st.bn + 1
          local cool = math.min(a.bcool * 2 ^ math.min(st.bn - 1, 16), a.bmax)
          st.bou = now + math.floor(cool)
          st.bok, st.bf, st.bpok, st.bpf, st.bws = 0, 0, 0, 0, now
          decrease(false)
          pause_until(st.bou)
        end
      end
    end
    redis.call('HSET', skey, 'r', string.format('%.17g', st.r), 'lim', string.format('%.17g', st.lim),
      'ts', string.format('%.0f', st.ts), 'dec', string.format('%.0f', st.dec), 'pu', string.format('%.0f', st.pu),
      'sp', string.format('%.17g', st.sp), 'we', string.format('%.0f', st.we),
      'bws', string.format('%.0f', st.bws), 'bok', string.format('%.17g', st.bok), 'bf', string.format('%.17g', st.bf),
      'bpok', string.format('%.17g', st.bpok), 'bpf', string.format('%.17g', st.bpf),
      'bou', string.format('%.0f', st.bou), 'bn', string.format('%.0f', st.bn), 'cf', string.format('%.17g', st.cf),
      'cr', string.format('%.17g', st.cr), 'ct', string.format('%.0f', st.ct),
      'cs', string.format('%.17g', st.cs), 'cn', string.format('%.0f', st.cn), 'cp', string.format('%.0f', st.cp),
      'jw', st.jw, 'jt', string.format('%.0f', st.jt), 'nz', string.format('%.17g', st.nz),
      'ps', string.format('%.17g', st.ps), 'ar', ar)
    -- Forgotten after an hour idle: it comes back at the ceiling.
    pexpire(skey, 3600000 + math.max(st.pu - now, 0) / 1000)
    eff_milli = math.floor(st.r * 1000)
    eff_rate = st.r
    local f = st.r / ceiling
    if f > 1 then f = 1 end
    eff_burst = math.max(1, cburst * f)
    if now < st.bou then open = 1 end
    if st.pu > now then
      paused_us = st.pu - now
      return {0, paused_us, paused_us, alevel - 1, eff_milli, paused_us, 0, active, open, 0, judge, noise_micro,
              wide_acc, wide_thr, wide_rt}
    end
  end
end

-- Priority (LeasePriority in include/pacer/quota.h): which classes are
-- asking, and what that makes of this request's lookahead on the shared
-- level and of its own share of it.
local plevel, pahead, pfrac, higher = 0, ahead, 1, 0
if npk > 0 then
  local pb = 8 + 2 * nlev + nadaptive
  plevel = tonumber(ARGV[pb + 1])
  local rank, pfloor = tonumber(ARGV[pb + 2]), tonumber(ARGV[pb + 3])
  local low, top, win = tonumber(ARGV[pb + 4]), tonumber(ARGV[pb + 5]), tonumber(ARGV[pb + 6])
  local memory = tonumber(ARGV[pb + 7])
  if plevel == nil or plevel < 1 or plevel > nlev or rank == nil or rank < 0 or pfloor == nil or pfloor ~= pfloor
      or low == nil or low < 0 or top == nil or top < 0 or win == nil or win <= 0 or memory == nil then
    return redis.error_reply('ERR pacer lease: bad priority arguments')
  end
  local ckey = KEYS[ckey_index]
  local me = string.format('%d', rank)
  if want > 0 then redis.call('HSET', ckey, me, string.format('%.0f', now)) end
  local h = redis.call('HGETALL', ckey)
  if memory < win then memory = win end
  local lower, higher_seen = 0, 0
  for i = 1, #h, 2 do
    local r, at = tonumber(h[i]), tonumber(h[i + 1])
    if r == nil or at == nil or now - at >= memory then
      redis.call('HDEL', ckey, h[i])
    else
      if r < rank then higher_seen = higher_seen + 1 end
      if now - at < win then
        if r < rank then higher = higher + 1 elseif r > rank then lower = lower + 1 end
      end
    end
  end
  pexpire(ckey, memory / 1000 + 1000)
  if higher > 0 then
    pahead = low * (1 + lower / (higher + lower))
  elseif lower > 0 or higher_seen > 0 then
    pahead = math.min(ahead, top)
    if lower > 0 and npk > 1 then pfrac = 1 - math.min(math.min(math.max(pfloor, 0), 0.5) * lower, 0.9) end
  end
end

local rates, caps, held, aheads, keys = {}, {}, {}, {}, {}
local bind, least = 1, nil
local grant = want
local function level(key, rate, burst, la)
  local code = unholdable(rate, burst)
  if code then return {-1, code, #keys} end
  if burst < 1 then burst = 1 end
  local cap = math.floor(burst * U)
  -- The bucket is kept as the time it is full again (GCRA's theoretical
  -- arrival time), with the rate and cap that time was reckoned at. Beyond
  -- the burst's refill it is time owed to grants made ahead of time: kept as
  -- time when the rate changes, so a grant made at a lower rate keeps its
  -- place and the next one starts after it instead of overlapping it. Within
  -- it, it is tokens missing from a full bucket: kept as tokens, so a new
  -- rate refills at once. rate tokens/s is exactly rate micro-tokens per
  -- microsecond; a clock that went back (failover) only leaves fewer tokens.
  local h = redis.call('HMGET', key, 'tat', 'r', 'c')
  local tat, r0, c0 = tonumber(h[1]), tonumber(h[2]), tonumber(h[3])
  if tat == nil or r0 == nil or c0 == nil or r0 <= 0 then
    tat, r0, c0 = now, rate, cap
    if not fill_new and rate > 0 then tat = now + cap / rate end
  end
  local tokens = 0
  local owed = 0  -- microseconds owed to grants made ahead
  if rate > 0 then
    local d = math.max(tat - now, 0)
    owed = math.max(d - c0 / r0, 0)
    local in_burst = math.max(c0 - (d - owed) * r0, 0)
    tokens = math.min(cap, in_burst) - owed * rate
  end
  tokens = math.floor(tokens - debt * U)
  local avail = -1
  if rate > 0 then avail = math.floor((tokens + rate * la) / U) end
  if avail < grant then grant = math.max(avail, 0) end
  local i = #keys + 1
  if least == nil or tokens < least then bind, least = i, tokens end
  rates[i], caps[i], held[i], aheads[i], keys[i] = rate, cap, tokens, la, key
  return nil
end
local shared_rate, shared_burst = 0, 1
for i = 1, nlev do
  local rate = tonumber(ARGV[9 + 2 * (i - 1)])
  local burst = tonumber(ARGV[10 + 2 * (i - 1)])
  if i == alevel and eff_rate then rate, burst = eff_rate, eff_burst end
  local la = ahead
  if i == plevel then la, shared_rate, shared_burst = pahead, rate, burst end
  local refusal = level(KEYS[i], rate, burst, la)
  if refusal then return refusal end
end
if pfrac < 1 then
  local refusal = level(KEYS[ckey_index + 1], shared_rate * pfrac, shared_burst, pahead)
  if refusal then return refusal end
end
local nall = #keys
local mg = math.min(math.max(min_grant, 1), want)
if higher > 0 then  -- never ask more of the shared level than it can give this class at once
  mg = math.min(mg, math.max(1, math.floor((caps[plevel] + rates[plevel] * aheads[plevel]) / U)))
end
if grant < mg then grant = 0 end
-- The grant's schedule (LeaseReply::start_tokens and schedule_rate; see
-- schedule() in local_quota_backend.cc): the chord of min_i (t_i + r_i tau)
-- from when every bucket holds a token again to when it reaches the grant.
local start, srate = 0, 0
if grant > 0 then
  local tau_a, tau_n, ok = 0, 0, true
  for i = 1, nall do
    if rates[i] <= 0 then ok = false break end
    local a = -held[i] / rates[i]
    if a > tau_a then tau_a = a end
    local b = (grant * U - held[i]) / rates[i]
    if b > tau_n then tau_n = b end
  end
  if ok then
    local m0 = nil
    for i = 1, nall do
      local v = held[i] + rates[i] * tau_a
      if m0 == nil or v < m0 then m0 = v end
    end
    if m0 >= grant * U or tau_n <= tau_a then
      start, srate = grant * U, rates[1]
    else
      srate = (grant * U - m0) / (tau_n - tau_a)
      start = math.floor(m0 - srate * tau_a)
    end
  end
end
local wait = 0
local full_in = -1
for i = 1, nall do
  local left = held[i] - grant * U
  local rate = rates[i]
  local ttl = 60000
  if rate > 0 then
    redis.call('HSET', keys[i], 'tat', string.format('%.0f', now + (caps[i] - left) / rate),
      'r', string.format('%.17g', rate), 'c', string.format('%.0f', caps[i]))
    ttl = (caps[i] - left) / rate / 1000 + 1000
  end
  pexpire(keys[i], ttl)
  if i == bind and rate > 0 then full_in = math.floor((caps[i] - left) / rate) end
  if rate == 0 then
    wait = -1
  elseif wait >= 0 then
    local need
    if grant > 0 or want == 0 then need = U - left else need = mg * U - (left + rate * aheads[i]) end
    if need > 0 then
      local w = math.ceil(need / rate)
      if w > wait then wait = w end
    end
  end
end
-- The class's own bucket is not one of the request's levels: it stands for
-- the shared level it is a share of.
if bind > nlev then bind = plevel end
return {grant, wait, full_in, bind - 1, eff_milli, paused_us, start, active, open, math.floor(srate * U), judge,
        noise_micro, wide_acc, wide_thr, wide_rt}
