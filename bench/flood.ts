/**
 * A second client, in its own process so that it never shares an event loop with the
 * measured one: sends `rate` req/s for `seconds` to `url`, each with a new random API key
 * (`unknown`: every one a cache miss) or with none (`none`). Prints its status counts.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';

const [url, rate, seconds, mode] = process.argv.slice(2) as [string, string, string, 'unknown' | 'none'];
const result = await autocannon({
  url,
  connections: 20,
  pipelining: 1,
  duration: Number(seconds),
  overallRate: Number(rate),
  ...(mode === 'unknown'
    ? {
        requests: [
          {
            setupRequest: (req: any) => ({ ...req, headers: { ...req.headers, authorization: `Bearer as_${randomBytes(32).toString('base64url')}` } }),
          },
        ],
      }
    : {}),
});
process.stdout.write(JSON.stringify({ statusCodeStats: result.statusCodeStats, errors: result.errors, timeouts: result.timeouts }));
