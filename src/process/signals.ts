export type StopReason = { signal: NodeJS.Signals };

/**
 * The same signal again within this long is the same request, not a second one: when a whole
 * process group is signalled (systemd's KillMode=control-group, Ctrl-C, `kill -- -PGID`),
 * `npm start` forwards the signal the server already had, a few milliseconds later; so does
 * a cluster primary to its workers. An operator's second signal comes seconds later.
 */
export const REPEAT_WINDOW_MS = 1000;

/**
 * Sorts the signals a process receives into what they ask for: the first asks to stop; the
 * same signal again within REPEAT_WINDOW_MS of it is its echo ('repeat'); any later one asks
 * to hurry; one after that, to exit now.
 */
export function signalCounter(now: () => number = () => performance.now()) {
  let stops = 0;
  let last: { signal: NodeJS.Signals; at: number } | undefined;
  return (signal: NodeJS.Signals): 'stop' | 'repeat' | 'hurry' | 'exit' => {
    const at = now();
    // From the signal that counted: echoes never extend the window, so one sent every half second still hurries.
    if (last !== undefined && last.signal === signal && at - last.at < REPEAT_WINDOW_MS) return 'repeat';
    last = { signal, at };
    stops++;
    return stops === 1 ? 'stop' : stops === 2 ? 'hurry' : 'exit';
  };
}

/**
 * Runs `stop` once on the first SIGTERM or SIGINT, then exits 0 (1 if it failed). A
 * second signal resolves `hurry`, so a drain can be cut short; a third exits at once.
 * Repeats of a signal within REPEAT_WINDOW_MS count once (see there).
 */
export function onStopSignals(stop: (reason: StopReason, hurry: Promise<void>) => Promise<void>, log: (message: string) => void): void {
  const classify = signalCounter();
  let hurryUp!: () => void;
  const hurry = new Promise<void>((resolve) => (hurryUp = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    const meaning = classify(signal);
    if (meaning === 'stop') {
      stop({ signal }, hurry).then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`shutdown failed: ${(err as Error)?.stack ?? String(err)}\n`);
          process.exit(1);
        },
      );
    } else if (meaning === 'repeat') log(`${signal} again within ${REPEAT_WINDOW_MS} ms: the same request (a process group's signal, forwarded), not a second one`);
    else if (meaning === 'hurry') {
      log(`${signal}: a second signal, cutting the drain short`);
      hurryUp();
    } else process.exit(1);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
