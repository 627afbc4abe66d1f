import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * With WORKERS > 1 a scrape reaches one worker (they share the port); that worker asks the
 * primary, which collects every worker's metrics (prom-client's cluster protocol) and
 * answers with their sum, so one scrape shows the whole instance.
 */
const REQUEST = 'animal-store:metrics-request';
const RESPONSE = 'animal-store:metrics-response';
const TIMEOUT_MS = 5000;

interface Response {
  type: typeof RESPONSE;
  id: string;
  text?: string;
  error?: string;
}

const pending = new Map<string, { resolve(text: string): void; reject(err: Error): void }>();
let listening = false;

/** In a worker: this worker's registry answers the primary's collection requests. */
export function shareWithPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // its construction is what makes a worker answer the primary
}

/** In a worker: the metrics of all workers, summed by the primary. */
export function scrapeAllWorkers(): Promise<string> {
  if (!listening) {
    listening = true;
    process.on('message', (message: Response) => {
      if (message?.type !== RESPONSE) return;
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.text !== undefined) waiter?.resolve(message.text);
      else waiter?.reject(new Error(message.error ?? 'no metrics'));
    });
  }
  const id = randomUUID();
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error('the primary did not answer the metrics request'));
    }, TIMEOUT_MS);
    pending.set(id, {
      resolve: (text) => (clearTimeout(timer), resolve(text)),
      reject: (err) => (clearTimeout(timer), reject(err)),
    });
    process.send!({ type: REQUEST, id });
  });
}

/** In the primary: answers workers' requests for the whole instance's metrics. */
export function answerMetricsRequests(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, message: { type?: string; id?: string }) => {
    if (message?.type !== REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: RESPONSE, id: message.id, text }),
      (err: Error) => worker.isConnected() && worker.send({ type: RESPONSE, id: message.id, error: err.message }),
    );
  });
}

export const isWorker = () => cluster.isWorker;
