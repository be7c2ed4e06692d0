#!/usr/bin/env bash
# Run HERE (Debian 12, as root), once, before the device call: downloads the
# Debian 12 packages the GPU machine lacks (spdlog, fmt, nlohmann-json, Qt 6
# Core + Test with moc, and the shared libraries Qt Core needs) into an
# ignored folder that the device call carries, and prints that call.
#
#   bench/gpu/prepare.sh [CARRY_DIR]      # default: .gpu-carry (repository root)
#
# The device unpacks them with `dpkg -x` into a prefix of its own
# (bench/gpu/run.sh); nothing is installed on this machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
carry_name=${1:-.gpu-carry}
carry="$root/$carry_name"
debs="$carry/debs"

# Headers, CMake packages and libraries to build core, CLI and tests (Qt's
# CMake files insist that qmake exists, though nothing runs it), and
# the libraries those need at run time that a non-Debian machine may lack.
# Qt Core's other dependencies (zlib, zstd, libstdc++, libgcc) are on any
# machine with a compiler; run.sh reports whatever is still missing.
packages=(
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 nlohmann-json3-dev
  qt6-base-dev qt6-base-dev-tools libqt6core6 libqt6test6 qmake6 qmake6-bin
  libicu72 libdouble-conversion3 libpcre2-16-0 libb2-1 libglib2.0-0
  libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo   # image tasks (PNG, JPEG)
)
# The multi-path paper preset trains on this text, absent on most machines.
extra_files=(/usr/share/common-licenses/GPL-3)
# What the device call may carry in all (64 MiB), less a margin for the
# repository's own tracked files, which travel too.
limit_bytes=$((64 * 1024 * 1024))

fail() { echo "prepare.sh: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "run as root (apt-get update needs it)"
command -v apt-get >/dev/null || fail "apt-get not found: this script expects Debian 12"
grep -q 'VERSION_CODENAME=bookworm' /etc/os-release \
  || echo "prepare.sh: warning: not Debian 12 (bookworm); the device expects bookworm's packages" >&2

echo "== apt-get update"
apt-get update -qq || fail "apt-get update failed (network? sources?)"

rm -rf "$debs"
mkdir -p "$debs" "$carry/files"
echo "== apt-get download into $debs"
# apt's download user (_apt) must be able to write where it downloads.
staging=$(mktemp -d)
chmod 777 "$staging"
(cd "$staging" && apt-get download -q "${packages[@]}") || fail "apt-get download failed for one of: ${packages[*]}"
# Epochs arrive as "%3a" in file names; keep names to plain characters.
for deb in "$staging"/*.deb; do
  mv "$deb" "$debs/$(basename "$deb" | sed 's/%3a/_/g')"
done
rmdir "$staging"
for f in "${extra_files[@]}"; do
  [[ -f $f ]] || fail "$f is missing here (package base-files)"
  cp "$f" "$carry/files/"
done

count=$(find "$debs" -name '*.deb' | wc -l)
((count == ${#packages[@]})) || fail "expected ${#packages[@]} .deb files, got $count"

carry_bytes=$(du -sb "$carry" | cut -f1)
repo_bytes=$(cd "$root" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$((carry_bytes + repo_bytes))
awk -v n="$count" -v c="$carry_bytes" -v r="$repo_bytes" -v t="$total" 'BEGIN {
  printf "== %d packages, %.1f MiB carried + %.1f MiB tracked = %.1f MiB of 64 MiB\n", n, c / 1048576, r / 1048576, t / 1048576 }'
((total < limit_bytes * 3 / 4)) || fail "carried files and repository exceed 48 MiB (3/4 of the 64 MiB limit)"

# An untracked folder that git does not ignore travels with the working tree
# anyway; once ignored, it travels only through the call's carry list.
if ! (cd "$root" && git check-ignore -q "$carry_name"); then
  echo "prepare.sh: note: $carry_name is not ignored by git yet; it travels as an untracked file until it is" >&2
fi

# What is not on record yet comes first (docs/gpu.md, "The next call"): with 15
# minutes of device time, the machine's start included, one call is what a
# session can count on.
# Issue 39: tst_cuda alone (the trainer's replayed steps against its ordinary
# ones, train.cuda_graph, and the kernel profile), then WideLab and PyTorch's
# fastest side (compile with CUDA graphs), each with the kernel profile of one
# more step, then WideLab's step as a graph, eager PyTorch and the rest.
command='WIDELAB_GPU_BUDGET_S=560 WIDELAB_GPU_STAGES="setup build test bench" WIDELAB_GPU_TESTS="tst_cuda" WIDELAB_GPU_TEST_S=90 WIDELAB_GPU_FAMILIES="deep-6x8 wide-1x48 widenet vit-moe" WIDELAB_GPU_SIDES="widelab compile-ro graph eager compile widelab-ops" bash bench/gpu/run.sh'
second='WIDELAB_GPU_STAGES="build test train" WIDELAB_GPU_TEST_S=220 WIDELAB_GPU_PRESETS="vit-moe-b-paper widenet-vit-b-4e-paper" WIDELAB_GPU_TRAIN_S=240 bash bench/gpu/run.sh'
cat <<MSG

== The device call (one run, up to 600 s):
   run(command='$command',
       carry=["$carry_name"],
       timeout_s=600)
   A second call on the still warm machine, only if status's budget_left_s is then
   above about 420 s, with WIDELAB_GPU_BUDGET_S=<budget_left_s - 60> put in front:
   run(command='$second',
       carry=["$carry_name"],
       timeout_s=600)
   Their files come back under files_at: summary.md, results.json, logs.tar.gz
   (the second call's results.json holds both calls' records).
   Then: python3 bench/gpu/report.py FILES_AT/results.json > table.md
   Everything in one call (every stage, each shortened to fit): bash bench/gpu/run.sh
MSG
