// The package (pino's own exit hook) ships no types; this is the part the service uses.
declare module 'on-exit-leak-free' {
  /** Calls `shutdown(obj, 'exit')` when the process exits, while `obj` is still alive (held weakly). */
  export function register<T extends object>(obj: T, shutdown: (obj: T, event: 'exit') => void): void;
  export function unregister(obj: object): void;
}
