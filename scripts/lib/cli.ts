import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What parseArgs returns for `options` (with --help), positionals allowed or not. */
type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ options: O & { help: { type: 'boolean'; short: 'h' } }; allowPositionals: true; strict: true }>>;

/**
 * A command's arguments, checked before it does anything (node:util's parseArgs, strict; at
 * most `positionals` arguments besides the options):
 * `--help` or `-h` prints `usage` on stdout and exits 0; an unknown or malformed argument
 * prints what is wrong and `usage` on stderr and exits 2.
 */
export function parseCommandLine<O extends Options = Record<never, never>>(
  usage: string,
  { options = {} as O, positionals = 0, args = process.argv.slice(2) }: { options?: O; positionals?: number; args?: string[] } = {},
): Parsed<O> {
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true }) as Parsed<O>;
    const extra = parsed.positionals[positionals];
    if (extra !== undefined) throw new Error(`Unexpected argument: ${extra}`);
  } catch (err) {
    // A request for help wins over a mistake elsewhere on the line.
    if (args.includes('--help') || args.includes('-h')) exitWithUsage(usage);
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help) exitWithUsage(usage);
  return parsed;
}

function exitWithUsage(usage: string): never {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
