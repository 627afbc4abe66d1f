#!/usr/bin/env bash
# npm run image:check: the Dockerfile reproduced in folders, since there is no Docker
# engine here. Both stages are laid out from the Dockerfile's own COPY lines (so the two
# cannot drift apart): the build stage compiles dist/ (with this checkout's node_modules
# standing in for its `npm ci`), the final stage gets production dependencies only. The
# final folder is then started with the image's CMD as an unprivileged user, on a database of
# its own on the local Postgres: it must serve, drain on SIGTERM and exit 0.
# Any failed check exits 1. The repository's own dist/ is left alone.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: npm run image:check

Reproduces the Dockerfile without Docker: lays out both stages in temporary folders from the
Dockerfile's own COPY lines, compiles in the first, runs npm ci --omit=dev in the final one,
and starts that folder with the image's CMD as an unprivileged user, on a database of its own
(TEST_POSTGRES_URL, else DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test's server):
it must serve and drain on SIGTERM, exiting 0. About 30 s; exits 1 at the first failed check.
Its folders, database and server are removed at the end, on failure and on Ctrl-C.
USAGE
}
# shellcheck source=cli.sh
. "$(dirname "$0")/cli.sh"
no_arguments_but_help "$@"

cd "$(dirname "$0")/../.."
repo=$PWD
dockerfile=$repo/Dockerfile
work=$(mktemp -d "${TMPDIR:-/tmp}/animal-store-image.XXXXXX")
chmod 755 "$work" # the unprivileged user must reach the folder
app=$work/app
log=
server_pid=
passed=0

admin_url=${TEST_POSTGRES_URL:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}}
database=image_check_$$
database_url=${admin_url%/*}/$database
cleanup() {
  # The server runs in a session of its own: stop all of it, then remove its database and the folders.
  if [ -n "$server_pid" ]; then kill -KILL -- "-$server_pid" 2>/dev/null || true; fi
  psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap (bash runs it once the command in progress ends).
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ok() {
  passed=$((passed + 1))
  echo "  ok    $*"
}
fail() {
  echo "  FAIL  $*" >&2
  if [ -n "$log" ] && [ -f "$log" ]; then
    echo "--- last lines of the server's output:" >&2
    tail -n 40 "$log" >&2
  fi
  echo "image:check: $passed passed, 1 failed" >&2
  exit 1
}

for tool in curl psql setsid ss; do command -v "$tool" >/dev/null || fail "needs $tool on PATH"; done

# --- The stages, read from the Dockerfile -----------------------------------------------
echo "=== image:check: the Dockerfile's stages ==="
# "<stage number>\t<stage name>\t<line>" for every line, continuation lines joined.
staged=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile" |
  awk 'toupper($1) == "FROM" { n++; name = toupper($3) == "AS" ? $4 : n; next } NF && $1 !~ /^#/ { print n "\t" name "\t" $0 }')
final=$(printf '%s\n' "$staged" | tail -n 1 | cut -f 1)
stage_lines() { printf '%s\n' "$staged" | awk -F '\t' -v s="$1" '$1 == s || $2 == s { print $3 }'; }
# The arguments of one instruction in one stage, a line each.
directive() { stage_lines "$1" | awk -v d="$2" 'toupper($1) == d { $1 = ""; sub(/^ /, ""); print }'; }
stage=$(stage_lines "$final")

workdir=$(directive "$final" WORKDIR | tail -n 1)
image_user=$(directive "$final" USER | tail -n 1)
cmd_json=$(directive "$final" CMD | tail -n 1)
[ -n "$workdir" ] || fail "the final stage has no WORKDIR"
# Exec form (a JSON array): node is PID 1 and receives SIGTERM itself.
cmd_words=$(node -e 'const c = JSON.parse(process.argv[1]); if (!Array.isArray(c)) process.exit(1); console.log(c.join("\n"))' "$cmd_json") ||
  fail "CMD is not in exec form: $cmd_json"
mapfile -t cmd <<<"$cmd_words"
if [ -z "$image_user" ] || [ "$image_user" = root ] || [ "$image_user" = 0 ]; then fail "the final stage does not switch to a non-root USER"; fi
# ENV k=v pairs (plain values; the Dockerfile uses no quotes there).
declare -A image_env=()
for pair in $(directive "$final" ENV); do image_env[${pair%%=*}]=${pair#*=}; done
[ "${image_env[HOST]:-}" = 0.0.0.0 ] || fail "the final stage does not set HOST=0.0.0.0"
printf '%s\n' "$stage" | grep -Eq "^RUN .*npm ci --omit=dev --no-audit --no-fund" || fail "the final stage does not run npm ci --omit=dev --no-audit --no-fund"
ok "final stage: WORKDIR $workdir, USER $image_user, HOST=0.0.0.0, CMD ${cmd[*]} (exec form)"

# Files the .dockerignore keeps out of the context cannot be copied: catch that here.
ignored() {
  local pattern
  while read -r pattern; do
    case $pattern in '' | '#'* | '!'*) continue ;; esac
    pattern=${pattern#/}
    case $1 in "$pattern" | "$pattern"/*) return 0 ;; esac
  done <"$repo/.dockerignore"
  return 1
}

declare -A stage_dir=() # a stage's name -> the folder that stands for its WORKDIR
# Lays out one stage's COPY lines in a folder; prints each line; sets `copies`.
copy_stage() {
  local name=$1 root=$2 wd words word from source dest target match
  wd=$(directive "$name" WORKDIR | tail -n 1)
  copies=0
  mkdir -p "$root"
  while read -r -a words; do
    [ "${#words[@]}" -gt 0 ] || continue
    from=
    local sources=()
    for word in "${words[@]}"; do
      case $word in
        --from=*) from=${word#--from=} ;;
        --*) ;;
        *) sources+=("$word") ;;
      esac
    done
    dest=${sources[-1]}
    unset 'sources[-1]'
    case $dest in
      "$wd") target=$root ;;
      "$wd"/*) target=$root/${dest#"$wd"/} ;;
      /*) fail "stage $name copies outside its WORKDIR $wd: $dest" ;;
      *) target=$root/${dest#./} ;;
    esac
    # Several sources, a glob or a trailing slash: the destination is a folder.
    if [ "${#sources[@]}" -gt 1 ] || [[ $dest == */ ]] || [[ ${sources[0]} == *'*'* ]]; then mkdir -p "$target"; fi
    for source in "${sources[@]}"; do
      local base=$repo
      if [ -n "$from" ]; then
        # --from=<stage>: a path in that stage's WORKDIR, inside the folder standing for it.
        [ -n "${stage_dir[$from]:-}" ] || fail "COPY --from=$from: no such stage laid out"
        base=${stage_dir[$from]}
        source=${source#"$(directive "$from" WORKDIR | tail -n 1)"/}
      elif ignored "$source"; then
        fail ".dockerignore excludes $source, which stage $name copies"
      fi
      shopt -s nullglob
      # shellcheck disable=SC2206 # the source is a glob on purpose, as in COPY
      local matches=("$base"/$source)
      shopt -u nullglob
      [ "${#matches[@]}" -gt 0 ] || fail "stage $name: COPY source missing: $source"
      for match in "${matches[@]}"; do
        if [ -d "$match" ]; then
          mkdir -p "$target" && cp -R "$match/." "$target/"
        elif [ -d "$target" ]; then
          cp "$match" "$target/"
        else
          mkdir -p "$(dirname "$target")" && cp "$match" "$target"
        fi
      done
    done
    copies=$((copies + 1))
    echo "        COPY ${words[*]}"
  done <<<"$(directive "$name" COPY)"
}

# --- The build stage: its files, then its RUN lines -------------------------------------
build_stage=$(printf '%s\n' "$stage" | sed -n 's/^COPY .*--from=\([^ ]*\).*/\1/p' | head -n 1)
[ -n "$build_stage" ] || fail "the final stage copies nothing from a build stage"
build=$work/build
echo "=== image:check: stage $build_stage in $build, with node $(node --version) ==="
copy_stage "$build_stage" "$build"
stage_dir[$build_stage]=$build
while read -r run; do
  case $run in
    # Its devDependencies: this checkout's, already installed from the same lockfile.
    "npm ci "*) ln -s "$repo/node_modules" "$build/node_modules" ;;
    "npm run build") (cd "$build" && npm run --silent build) || fail "stage $build_stage: npm run build failed (above)" ;;
    *) fail "stage $build_stage: image:check does not know how to reproduce RUN $run" ;;
  esac
  echo "        RUN $run"
done <<<"$(directive "$build_stage" RUN)"
[ -f "$build/dist/src/server.js" ] || fail "stage $build_stage built no dist/src/server.js"
ok "stage $build_stage: $copies COPY lines, npm run build"

echo "=== image:check: the final stage's files in $app ==="
copy_stage "$final" "$app"
[ "$copies" -gt 0 ] || fail "the final stage has no COPY lines"
ok "final stage: $copies COPY lines"

# The environment the image gives every process (its ENV), then what differs in a folder.
base_env=(PATH="$PATH" HOME="$work/home" npm_config_cache="$work/home/.npm" npm_config_update_notifier=false)
for name in "${!image_env[@]}"; do base_env+=("$name=${image_env[$name]}"); done
# With DATABASE_URL the server keeps nothing in DATA_DIR; still, not the host's /app/data.
if [ -n "${image_env[DATA_DIR]:-}" ]; then base_env+=("DATA_DIR=$work/data"); fi

echo "=== image:check: npm ci --omit=dev --no-audit --no-fund (as the Dockerfile) ==="
(cd "$app" && env NODE_ENV="${image_env[NODE_ENV]:-}" npm ci --omit=dev --no-audit --no-fund --loglevel=error)
ok "npm ci --omit=dev in the folder"
for dev in typescript tsx vitest; do [ ! -e "$app/node_modules/$dev" ] || fail "devDependency $dev was installed"; done
[ -z "$(find "$app" -path "$app/node_modules" -prune -o -name '*.ts' -print)" ] || fail "TypeScript sources in the folder"
ok "no devDependencies (typescript, tsx, vitest) and no .ts sources in the folder"

# Everything in the folder stays root's, as in the image; the server runs as another user.
mkdir -p "$work/home"
as_user=()
if [ "$(id -u)" = 0 ]; then
  chown nobody:nogroup "$work/home"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  who="nobody (non-root; the folder is root's, as in the image)"
else
  who="$(id -un) (not root here, so no switch to another user)"
fi
# The user must find the same node on PATH (a folder it cannot enter would be skipped silently).
# (through sh: setpriv itself looks its command up before it drops privileges)
user_node=$(env -i PATH="$PATH" "${as_user[@]}" sh -c 'node --version')
[ "$user_node" = "$(node --version)" ] || fail "the server's user runs node $user_node, not $(node --version): make the node on PATH readable to it"
in_folder() { (cd "$app" && env -i "${base_env[@]}" DATABASE_URL="$database_url" "${as_user[@]}" "$@"); }

# --- npm start: without dist/ a clear message, not "tsc: not found"; with it, no compiling --
mv "$app/dist" "$work/dist.aside"
if in_folder npm start >"$work/prestart.out" 2>&1; then fail "npm start without dist/ succeeded"; fi
if ! grep -q 'lacks' "$work/prestart.out" || ! grep -q 'dist/src/server.js' "$work/prestart.out"; then
  cat "$work/prestart.out" >&2
  fail "npm start without dist/ did not name what is missing"
fi
mv "$work/dist.aside" "$app/dist"
ok "npm start without dist/ exits non-zero naming dist/src/server.js (no devDependencies needed to say so)"
in_folder npm start -- --help >"$work/prestart.out" 2>&1 || { cat "$work/prestart.out" >&2; fail "npm start -- --help failed in the folder"; }
ok "npm start -- --help in the folder: prestart passes without devDependencies and the server answers"

# --- Start with the image's CMD, serve, stop ----------------------------------------------
psql "$admin_url" -qc "CREATE DATABASE $database" >/dev/null || fail "cannot create database $database on $admin_url"
port=$(node -e 'const s = require("node:net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
base=http://127.0.0.1:$port
log=$work/server.log
status_of() { curl -s -o "$work/body" -w '%{http_code}' --max-time 5 "$@" || true; }
expect() {
  local want=$1 what=$2
  shift 2
  local got
  got=$(status_of "$@")
  [ "$got" = "$want" ] || fail "$what: $got, not $want ($(head -c 300 "$work/body"))"
  ok "$what: $got"
}
# A short drain keeps the check quick.
(cd "$app" && exec setsid env -i "${base_env[@]}" DATABASE_URL="$database_url" PORT="$port" SHUTDOWN_DRAIN_SECONDS=2 "${as_user[@]}" "${cmd[@]}") >"$log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  [ "$(status_of "$base/readyz")" = 200 ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "${cmd[*]} exited before it was ready"
  sleep 0.2
done
[ "$(status_of "$base/readyz")" = 200 ] || fail "${cmd[*]}: /readyz did not answer 200 within 60 s"
ss -Hltn "sport = :$port" | grep -q "0.0.0.0:$port" || fail "${cmd[*]} does not listen on 0.0.0.0:$port"
ok "${cmd[*]}: /readyz 200, listening on 0.0.0.0:$port as $who"

expect 200 "GET /healthz" "$base/healthz"
expect 200 "GET /openapi.json (openapi.yaml is there)" "$base/openapi.json"
expect 200 "GET /docs (Swagger UI from production dependencies)" -L "$base/docs"
expect 401 "GET /v1/pets without a key" "$base/v1/pets"
[ -f "$app/dist/scripts/apikey.js" ] || fail "dist/scripts/apikey.js is missing"
key=$(in_folder node dist/scripts/apikey.js create --plan free --name image-check | tail -n 1)
[ -n "$key" ] || fail "node dist/scripts/apikey.js create printed no key"
ok "node dist/scripts/apikey.js create --plan free"
auth=(-H "Authorization: Bearer $key")
expect 200 "GET /v1/pets with the key" "${auth[@]}" "$base/v1/pets"
expect 201 "POST /v1/pets (migrations ran, the store writes)" "${auth[@]}" -H 'Content-Type: application/json' \
  -d '{"name": "Image Check", "categoryId": 7}' "$base/v1/pets"

# The drain keeps the listener open while /readyz says 503, then the process exits 0.
kill -TERM "$server_pid"
draining=
for _ in $(seq 1 10); do
  [ "$(status_of "$base/readyz")" = 503 ] && draining=yes && break
  sleep 0.1
done
[ -n "$draining" ] || fail "/readyz did not answer 503 during the drain"
exit_code=timeout
for _ in $(seq 1 150); do
  if ! ps -o stat= -p "$server_pid" | grep -qv Z; then
    exit_code=0
    wait "$server_pid" || exit_code=$?
    break
  fi
  sleep 0.2
done
server_pid=
[ "$exit_code" = 0 ] || fail "exit code after SIGTERM was $exit_code, not 0"
ok "SIGTERM -> /readyz 503 while draining, then exit 0"

log=
echo "image:check: $passed passed, 0 failed (node $(node --version))"
