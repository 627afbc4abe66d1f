import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * With WORKERS > 1 the primary serves the metrics listener and sums every worker's metrics
 * with prom-client's own cluster support (AggregatorRegistry), so one scrape shows the whole
 * instance.
 */

/** In a worker: this worker's registry answers the primary's collection requests. */
export function shareWithPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // its construction is what makes a worker answer the primary
}

/** In the primary: the metrics of every worker, summed. */
export function clusterMetrics(): { scrape(): Promise<string>; contentType: string } {
  const aggregator = new AggregatorRegistry();
  return { scrape: () => aggregator.clusterMetrics(), contentType: aggregator.contentType };
}

export const isWorker = () => cluster.isWorker;
