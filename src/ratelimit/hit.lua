-- One atomic round trip: ban check, both fixed UTC windows, rejection count.
-- ARGV: subject (with the deployment's prefix), perMinute, perDay, banAfter, banSeconds,
-- batch (most requests to reserve at once), now (Unix seconds, the instance's clock).
-- Returns outcome, minute count, day count, now, ban TTL, requests reserved.
local now = tonumber(ARGV[7])
local p = ARGV[1]
local perMinute = tonumber(ARGV[2])
local perDay = tonumber(ARGV[3])
local minute = math.floor(now / 60)
local mKey = p .. ':m:' .. minute
local dKey = p .. ':d:' .. math.floor(now / 86400)
local banKey = p .. ':ban'
local m = tonumber(redis.call('GET', mKey) or '0')
local d = tonumber(redis.call('GET', dKey) or '0')
local banTtl = redis.call('TTL', banKey)
if banTtl > 0 then
  return {'banned', m, d, now, banTtl, 0}
end
if m < perMinute and d < perDay then
  -- A busy key far from its limits reserves up to `batch` requests (a thousandth of what
  -- is left); near the limits every request comes here, so the quota stays exact.
  local n = math.max(1, math.min(tonumber(ARGV[6]), math.floor((perMinute - m) / 1000), math.floor((perDay - d) / 1000)))
  m = redis.call('INCRBY', mKey, n)
  if m == n then redis.call('EXPIRE', mKey, 120) end
  d = redis.call('INCRBY', dKey, n)
  if d == n then redis.call('EXPIRE', dKey, 172800) end
  return {'allowed', m, d, now, 0, n}
end
-- Refused requests are not counted against the quotas, only towards a ban.
local rKey = p .. ':r:' .. minute
local r = redis.call('INCR', rKey)
if r == 1 then redis.call('EXPIRE', rKey, 120) end
if r > tonumber(ARGV[4]) then
  redis.call('SET', banKey, '1', 'EX', tonumber(ARGV[5]))
  return {'ban-started', m, d, now, tonumber(ARGV[5]), 0}
end
return {'limited', m, d, now, 0, 0}
