#!/usr/bin/env bash
# The README's first command on a bare Debian 12, timed: from running
# packaging/setup-and-run.sh (headless: the command-line trainer) to its first
# training line, and how much of that apt took. The bare machine is a
# debootstrap minbase root (made once, kept as a pristine copy, and copied for
# each measurement), the clone made from outside it. Needs root and debootstrap.
#
#   bench/fresh-machine.sh [REF]     REF: the branch or commit to clone (default: HEAD)
#
# Prints "apt: N s" and "first training line: N s". WORK (default
# /var/tmp/widelab-fresh) holds the roots; the training output is WORK/output.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ref="${1:-HEAD}"
work="${WORK:-/var/tmp/widelab-fresh}"
pristine="$work/pristine" root="$work/root" log="$work/output.log"
[[ $(id -u) -eq 0 ]] || { echo "fresh-machine: run as root (chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "fresh-machine: apt-get install debootstrap" >&2; exit 1; }

mkdir -p "$work"
if [[ ! -d "$pristine" ]]; then
  debootstrap --variant=minbase bookworm "$pristine.new" http://deb.debian.org/debian
  mv "$pristine.new" "$pristine"
fi

# The mounts are taken down before anything under the root is removed: a removal
# that ran through a bind-mounted /dev would remove the host's devices.
unmount() {
  local m
  for m in dev sys proc; do
    if mountpoint -q "$root/$m"; then umount "$root/$m"; fi
  done
}
trap unmount EXIT
unmount
if grep -q " $root/" /proc/mounts; then
  echo "fresh-machine: something is still mounted under $root; not removing it" >&2
  exit 1
fi
rm -rf "$root"
cp -a "$pristine" "$root"
mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-checkout . "$root/root/widelab"
git -C "$root/root/widelab" checkout -q "$(git rev-parse "$ref")"

start=$SECONDS
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin WIDELAB_CLI=1 \
  bash -c 'cd /root/widelab && exec packaging/setup-and-run.sh' >"$log" 2>&1 &
pid=$!
apt_done=""
while kill -0 "$pid" 2>/dev/null; do
  if [[ -z "$apt_done" ]] && grep -q "CXX compiler identification" "$log"; then apt_done=$((SECONDS - start)); fi
  if grep -aq "step [0-9]*/" "$log"; then break; fi
  sleep 1
done
first=$((SECONDS - start))
kill -INT "$pid" 2>/dev/null || true  # the trainer saves a checkpoint and stops
wait "$pid" || true
if ! grep -aq "step [0-9]*/" "$log"; then
  echo "fresh-machine: no training line; see $log" >&2
  exit 1
fi
echo "apt: ${apt_done:-?} s"
echo "first training line: $first s"
