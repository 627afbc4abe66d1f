// The run's reaper: a process of its own (its own session, so a Ctrl-C meant for the run does not
// reach it) that globalSetup starts with a pipe to it; see testRun.ts for what a run leaves.
//  - "done" on the pipe (the run's teardown): it cleans up the run's processes, folder and
//    databases, and answers with the counts as a JSON line;
//  - the pipe's end (the vitest process has exited, however: normally, interrupted, killed,
//    crashed; no teardown runs in the last three): it cleans up once more, the run's vitest
//    workers included (a timed-out test may still start something until its worker ends), and exits.
// Argument: JSON { run, adminUrls }.
import { cleanUpRun, type TestRun } from './testRun.js';

const { run, adminUrls } = JSON.parse(process.argv[2]!) as { run: TestRun; adminUrls: string[] };
let input = '';
let cleaning: Promise<unknown> = Promise.resolve();
process.stdin.setEncoding('utf8');
process.stdout.on('error', () => {}); // nobody reads any more: the run died
process.stdin.on('error', () => {});
process.stdin.on('data', (chunk: string) => {
  input += chunk;
  if (!input.includes('done\n')) return;
  input = '';
  cleaning = cleaning
    .then(() => cleanUpRun(run, { adminUrls }))
    .then(
      (counts) => process.stdout.write(`${JSON.stringify(counts)}\n`),
      (err: Error) => process.stdout.write(`${JSON.stringify({ error: err.message })}\n`),
    );
});
process.stdin.on('end', () => {
  void cleaning
    .then(() => cleanUpRun(run, { adminUrls, workers: true }))
    .catch(() => {})
    .finally(() => process.exit(0));
});
