/**
 * Preloaded into every server the benchmark measures (`node --import`): counts the bytes the
 * process has allocated on the JS heap, from V8's own GC records (v8.GCProfiler: what each
 * collection freed, plus what is in use now). On SIGUSR2 it writes `<sequence> <bytes>` to
 * $ALLOCATION_METER_FILE, so the benchmark can read it before and after a run.
 */
import { writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const file = process.env.ALLOCATION_METER_FILE;
if (file) {
  let profiler = new v8.GCProfiler();
  profiler.start();
  let freed = 0;
  let sequence = 0;
  process.on('SIGUSR2', () => {
    for (const gc of profiler.stop().statistics) {
      freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
    }
    profiler = new v8.GCProfiler();
    profiler.start();
    writeFileSync(file, `${++sequence} ${freed + v8.getHeapStatistics().used_heap_size}`);
  });
}
