import { inject } from 'vitest';
import { SCRATCH_ROOT_VARIABLE } from './scratchDir.js';
import { registerWorker, RUN_VARIABLE } from './testRun.js';

// Before each test file, in its worker: everything the file starts inherits the run's marker,
// every throwaway directory goes into the run's folder, and the worker is on the run's list,
// so that whatever ends the run, its reaper finds all of it (test/helpers/testRun.ts).
const run = inject('run');
process.env[RUN_VARIABLE] = run.id;
process.env[SCRATCH_ROOT_VARIABLE] = run.dir;
await registerWorker(run);
