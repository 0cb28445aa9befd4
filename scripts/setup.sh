#!/usr/bin/env bash
# The one set-up of a development or CI machine: the Debian packages layerfs's tests, benchmarks
# and optional features use, then `npm ci`. It lives in the repository only; nothing installs
# system packages from an npm lifecycle script. Runs unattended; without root or apt-get it
# says which packages are missing and goes on with npm.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# Each line: a package, then what needs it.
packages=(
  "fuse3        FUSE Workspaces as an ordinary user (fusermount3)"
  "attr         getfattr/setfattr, for comparing xattrs with a peer tool"
  "cmake        building the addon where no prebuild loads"
  "g++          building the addon and better-sqlite3"
  "make         node-gyp"
  "python3      node-gyp"
  "git          the peer in benchmarks and patch round-trip tests"
  "rsync        the peer in benchmarks"
  "bubblewrap   Sandboxes: the namespaces sandboxed executions run in (bwrap)"
  "tmux         driving workspace shell through a terminal in tests"
  "postgresql   remotes: tests and benchmarks start throw-away PostgreSQL 15 clusters"
  "tar          tar -x round trips of export --format tar"
  "e2fsprogs    mkfs.ext4: the FUSE read benchmark's plain copy in 4 KiB folios (an ext4 loop mount)"
  "clang        the libFuzzer harnesses (npm run fuzz)"
  "libclang-rt-14-dev  libFuzzer's runtime for clang 14"
  "libzstd1     zstd's dictionary builder (ZDICT), loaded by db repack to train a Store's dictionary"
  "binutils     nm: the test that the addon exports only its entry points"
  "libfaketime  the test that a FUSE Workspace stamps the wall clock after it steps (the daemon under LD_PRELOAD)"
)

need=()
for line in "${packages[@]}"; do
  pkg=${line%% *}
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "setup: missing Debian packages (install them as root): ${need[*]}" >&2
  fi
fi

echo "setup: npm ci"
npm ci --no-audit --no-fund

# The addon (compiled here unless a prebuilt one loads) and dist/ for the CLI. Nothing in
# package.json builds at install time: a consumer of the published package uses its prebuilt
# addon and compiled files as they are.
echo "setup: build"
npm run build:dev
