import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import { freePort } from './ports.js';
import { stop, waitForOutput } from './processes.js';
import { openapiPath, projectRoot } from '../../src/paths.js';
import { expectMatchesContract } from './contract.js';
import { methodOf, send, type ApiResponse, type RequestOptions } from './http.js';

const prismBin = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');

/** One entry of Prism's `sl-violations` header. */
export interface Violation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

export interface PrismProxy {
  /** Prism's address: paths here are the document's, without the `/v1` of the server URL. */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * Starts Stoplight Prism as a validating proxy in front of `upstream` (a server URL with
 * its `/v1`). Without `--errors` Prism forwards every request it can parse and reports
 * what breaks openapi.yaml, in the request or in the response, in `sl-violations`.
 */
export async function startPrism(upstream: string): Promise<PrismProxy> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [prismBin, 'proxy', openapiPath, upstream, '--host', '127.0.0.1', '--port', String(port)],
    { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    await waitForOutput(child, /Prism is listening/, 30_000);
  } catch (err) {
    await stop(child, { signal: 'SIGKILL' });
    throw new Error(`prism: ${(err as Error).message}`);
  }
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: async () => {
      await stop(child);
    },
  };
}

export function violationsOf(headers: Headers): Violation[] {
  const raw = headers.get('sl-violations');
  return raw ? (JSON.parse(raw) as Violation[]) : [];
}

export interface ProxiedResponse extends ApiResponse {
  /** What Prism found wrong with the request (expected for deliberately invalid ones). */
  requestViolations: Violation[];
}

/**
 * A request sent through Prism to the service. Fails the test when Prism reports that the
 * response breaks openapi.yaml, or when Prism answered instead of the service; the
 * response is also checked by this suite's own contract check.
 */
export async function requestThroughPrism(
  prism: PrismProxy,
  key: string,
  path: string,
  opts: RequestOptions = {},
): Promise<ProxiedResponse> {
  const documentPath = path.replace(/^\/v1(?=\/)/, '');
  const res = await send(`${prism.baseUrl}${documentPath}`, opts, key);
  const where = `${methodOf(opts)} ${path} -> ${res.status}`;
  expect(res.headers.get('x-request-id'), `${where}: answered by Prism, not by the service: ${res.text}`).not.toBeNull();
  const violations = violationsOf(res.headers);
  expect(violations.filter((v) => v.location[0] !== 'request'), `${where}: Prism found the response breaks openapi.yaml`).toEqual([]);
  expectMatchesContract(methodOf(opts), `/v1${documentPath}`, res);
  return { ...res, requestViolations: violations.filter((v) => v.location[0] === 'request') };
}
