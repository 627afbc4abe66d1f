import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that becomes a real pino child only when something logs through it.
 * Most requests log nothing but their request line, which is written on the root logger
 * (logging/requestLog.ts): a pino child per request cost about 0.5 KB and a string of
 * its bindings on every request, used or not.
 */
class LazyChildLogger {
  #child: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  private real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  /** A level the parent has off costs nothing: no child is made for it. */
  private log(level: Level, args: unknown[]): void {
    if (this.#child === undefined && this.options.level === undefined && !this.parent.isLevelEnabled(level)) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]) {
    this.log('fatal', args);
  }
  error(...args: unknown[]) {
    this.log('error', args);
  }
  warn(...args: unknown[]) {
    this.log('warn', args);
  }
  info(...args: unknown[]) {
    this.log('info', args);
  }
  debug(...args: unknown[]) {
    this.log('debug', args);
  }
  trace(...args: unknown[]) {
    this.log('trace', args);
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's `request.log`, made real on first use. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
