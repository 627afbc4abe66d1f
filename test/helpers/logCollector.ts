import { Writable } from 'node:stream';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A stream to hand to startTestServer({ logStream }) and the JSON lines the service wrote to it. */
export function logCollector(): { stream: Writable; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { stream, lines };
}
