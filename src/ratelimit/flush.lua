-- Adds what one instance admitted on its own during a Redis outage to one counter.
-- KEYS[1]: the counter. ARGV: delta, floor (the counter as this instance last knew it,
-- plus delta), ttl (seconds, set when the key is new).
-- If Redis kept its data, the counter plus delta is right; if it came back empty, the
-- floor keeps what this instance knew from being forgotten.
local value = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(ARGV[1])
local floor = tonumber(ARGV[2])
if value < floor then value = floor end
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then
  redis.call('SET', KEYS[1], value, 'EX', ttl)
else
  redis.call('SET', KEYS[1], value, 'EX', tonumber(ARGV[3]))
end
return value
