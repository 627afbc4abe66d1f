import type { Registry } from 'prom-client';

/*
 * Counters and histograms whose label sets are all known at start: recording one is an index
 * and an array increment, and prom-client's registry still writes them out (it asks any
 * registered metric for get()). prom-client's own metrics validate and hash their labels and
 * build an object on every observe, even through a child: ~1.5 µs and 0.5 KB a request here.
 */

type Labels = Record<string, string>;

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** Every combination of the label values, in order: series i of `labelSets(a, b)` is a[i / b.length] with b[i % b.length]. */
export function labelSets(names: string[], values: string[][]): Labels[] {
  let sets: Labels[] = [{}];
  names.forEach((name, n) => {
    sets = sets.flatMap((set) => values[n]!.map((value) => ({ ...set, [name]: value })));
  });
  return sets;
}

abstract class PreparedMetric {
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';

  constructor(
    readonly name: string,
    readonly help: string,
    protected readonly series: Labels[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  protected abstract values(): MetricValue[];

  /** What prom-client's registry reads when scraped. */
  get() {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator };
  }
}

export class PreparedCounter extends PreparedMetric {
  readonly type = 'counter';
  private readonly counts: Float64Array;

  constructor(name: string, help: string, series: Labels[], registry: Registry) {
    super(name, help, series, registry);
    this.counts = new Float64Array(series.length);
  }

  inc(series: number, by = 1): void {
    this.counts[series]! += by;
  }

  /** Like prom-client: a series appears once counted; a counter without labels always. */
  protected values(): MetricValue[] {
    const unlabelled = this.series.length === 1 && Object.keys(this.series[0]!).length === 0;
    return this.series.flatMap((labels, i) => (unlabelled || this.counts[i]! > 0 ? [{ labels, value: this.counts[i]! }] : []));
  }
}

export class PreparedHistogram extends PreparedMetric {
  readonly type = 'histogram';
  /** Per series: one count per bucket and one for +Inf (not cumulative), then sum and count apart. */
  private readonly buckets: Float64Array;
  private readonly sums: Float64Array;
  private readonly totals: Float64Array;

  constructor(
    name: string,
    help: string,
    series: Labels[],
    private readonly upperBounds: number[],
    registry: Registry,
  ) {
    super(name, help, series, registry);
    this.buckets = new Float64Array(series.length * (upperBounds.length + 1));
    this.sums = new Float64Array(series.length);
    this.totals = new Float64Array(series.length);
  }

  observe(series: number, value: number): void {
    const bounds = this.upperBounds;
    let b = 0;
    while (b < bounds.length && value > bounds[b]!) b++;
    this.buckets[series * (bounds.length + 1) + b]! += 1;
    this.sums[series]! += value;
    this.totals[series]! += 1;
  }

  /** prom-client's exposition: cumulative buckets with `le` first, then +Inf, _sum and _count. */
  protected values(): MetricValue[] {
    const width = this.upperBounds.length + 1;
    return this.series.flatMap((labels, i) => {
      if (this.totals[i] === 0) return [];
      let cumulative = 0;
      const buckets = this.upperBounds.map((le, b) => {
        cumulative += this.buckets[i * width + b]!;
        return { labels: { le, ...labels }, value: cumulative, metricName: `${this.name}_bucket` };
      });
      return [
        ...buckets,
        { labels: { le: '+Inf', ...labels }, value: this.totals[i]!, metricName: `${this.name}_bucket` },
        { labels, value: this.sums[i]!, metricName: `${this.name}_sum` },
        { labels, value: this.totals[i]!, metricName: `${this.name}_count` },
      ];
    });
  }
}
