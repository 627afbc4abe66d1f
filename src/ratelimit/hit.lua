-- One atomic round trip: ban check, both fixed UTC windows, refusal count.
-- KEYS: minute counter, day counter, ban, refusals this minute, first refusal this minute
-- (all of one subject, with one hash tag: one cluster slot).
-- ARGV: perMinute, perDay, banAfter, banSeconds, batch (most requests to reserve at once),
-- now (Unix ms, the instance's clock), ban grace (ms).
-- Returns outcome, minute count, day count, now (s), ban TTL, requests reserved.
local mKey, dKey, banKey, rKey, fKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local perMinute = tonumber(ARGV[1])
local perDay = tonumber(ARGV[2])
local nowMs = tonumber(ARGV[6])
local now = math.floor(nowMs / 1000)
local m = tonumber(redis.call('GET', mKey) or '0')
local d = tonumber(redis.call('GET', dKey) or '0')
local banTtl = redis.call('TTL', banKey)
if banTtl > 0 then
  return {'banned', m, d, now, banTtl, 0}
end
if m < perMinute and d < perDay then
  -- A busy key far from its limits reserves up to `batch` requests (a thousandth of what
  -- is left); near the limits every request comes here, so the quota stays exact.
  local n = math.max(1, math.min(tonumber(ARGV[5]), math.floor((perMinute - m) / 1000), math.floor((perDay - d) / 1000)))
  m = redis.call('INCRBY', mKey, n)
  if m == n then redis.call('EXPIRE', mKey, 120) end
  d = redis.call('INCRBY', dKey, n)
  if d == n then redis.call('EXPIRE', dKey, 172800) end
  return {'allowed', m, d, now, 0, n}
end
-- Refused requests are not counted against the quotas, only towards a ban, and only
-- from `grace` after the first refusal of the minute: a burst is not a caller ignoring 429s.
local first = tonumber(redis.call('GET', fKey))
if not first then
  redis.call('SET', fKey, nowMs, 'EX', 120)
  return {'limited', m, d, now, 0, 0}
end
if nowMs - first < tonumber(ARGV[7]) then
  return {'limited', m, d, now, 0, 0}
end
local r = redis.call('INCR', rKey)
if r == 1 then redis.call('EXPIRE', rKey, 120) end
if r > tonumber(ARGV[3]) then
  redis.call('SET', banKey, '1', 'EX', tonumber(ARGV[4]))
  return {'ban-started', m, d, now, tonumber(ARGV[4]), 0}
end
return {'limited', m, d, now, 0, 0}
