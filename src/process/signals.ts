export type StopReason = { signal: NodeJS.Signals };

/**
 * Runs `stop` once on the first SIGTERM or SIGINT, then exits 0 (1 if it failed). A
 * second signal resolves `hurry`, so a drain can be cut short; a third exits at once.
 */
export function onStopSignals(stop: (reason: StopReason, hurry: Promise<void>) => Promise<void>): void {
  let received = 0;
  let hurryUp!: () => void;
  const hurry = new Promise<void>((resolve) => (hurryUp = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      stop({ signal }, hurry).then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`shutdown failed: ${(err as Error)?.stack ?? String(err)}\n`);
          process.exit(1);
        },
      );
    } else if (received === 2) hurryUp();
    else process.exit(1);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
