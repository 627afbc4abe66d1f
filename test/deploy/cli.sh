# Sourced by the bash commands under test/deploy/: `--help`/`-h` print the caller's `usage` and exit 0;
# any other argument prints what is wrong and the usage on stderr and exits 2 (as scripts/lib/cli.ts).
# shellcheck shell=bash
no_arguments_but_help() {
  for arg in "$@"; do
    case $arg in
      -h | --help) usage; exit 0 ;;
    esac
  done
  if [ $# -gt 0 ]; then
    { echo "Unexpected argument: $1"; echo; usage; } >&2
    exit 2
  fi
}
