-- One atomic round trip per request: ban check, both fixed UTC windows, rejection count.
-- ARGV: subject (with the deployment's prefix), perMinute, perDay, banAfter, banSeconds. Uses Redis's clock so all instances agree.
local t = redis.call('TIME')
local now = tonumber(t[1])
local p = ARGV[1]
local minute = math.floor(now / 60)
local mKey = p .. ':m:' .. minute
local dKey = p .. ':d:' .. math.floor(now / 86400)
local banKey = p .. ':ban'
local m = tonumber(redis.call('GET', mKey) or '0')
local d = tonumber(redis.call('GET', dKey) or '0')
local banTtl = redis.call('TTL', banKey)
if banTtl > 0 then
  return {'banned', m, d, now, banTtl}
end
if m < tonumber(ARGV[2]) and d < tonumber(ARGV[3]) then
  m = redis.call('INCR', mKey)
  if m == 1 then redis.call('EXPIRE', mKey, 120) end
  d = redis.call('INCR', dKey)
  if d == 1 then redis.call('EXPIRE', dKey, 172800) end
  return {'allowed', m, d, now, 0}
end
-- Refused requests are not counted against the quotas, only towards a ban.
local rKey = p .. ':r:' .. minute
local r = redis.call('INCR', rKey)
if r == 1 then redis.call('EXPIRE', rKey, 120) end
if r > tonumber(ARGV[4]) then
  redis.call('SET', banKey, '1', 'EX', tonumber(ARGV[5]))
  return {'ban-started', m, d, now, tonumber(ARGV[5])}
end
return {'limited', m, d, now, 0}
