/**
 * A failure to start that a person can act on: its message names the variable or resource
 * and says what to do, so it is printed alone, without a stack (src/server.ts).
 */
export class StartupError extends Error {
  override name = 'StartupError';
}
