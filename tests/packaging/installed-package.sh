#!/usr/bin/env bash
# The .deb unpacked into a fresh root without root privileges (dpkg-deb -x) and
# its programs run from there: they must read the presets and studies unpacked
# with them, not the source tree's copy (which every program falls back to, so
# that a broken install would pass unnoticed if only the names were compared).
#
# usage: installed-package.sh PACKAGE.deb VERSION GUI(ON|OFF)
set -euo pipefail
deb=$1 version=$2 gui=$3

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[[ -f $deb ]] || fail "$deb: no such package (cmake --build BUILD --target package writes it)"
root=$(mktemp -d "${TMPDIR:-/tmp}/widelab-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
root=$(realpath "$root")
dpkg-deb -x "$deb" "$root"
bin=$root/usr/bin
share=$root/usr/share/widelab

programs=(widelab-cli)
[[ $gui == ON ]] && programs+=(widelab)
for program in "${programs[@]}"; do
  [[ -x $bin/$program ]] || fail "the package has no /usr/bin/$program"
  # Every library from the system (the Debian packages it depends on), none
  # through a path into the build.
  if missing=$(ldd "$bin/$program" | grep 'not found'); then
    fail "$program: libraries not found: $missing"
  fi
  if readelf -d "$bin/$program" | grep -qE 'RPATH|RUNPATH'; then
    fail "$program: carries a library path: $(readelf -d "$bin/$program" | grep -E 'RPATH|RUNPATH')"
  fi
done

# The presets: every file of the installed folder listed, read from that folder.
expected=$(find "$share/presets" -maxdepth 1 -name '*.json' -printf '%f\n' | sed 's/\.json$//' | LC_ALL=C sort)
[[ -n $expected ]] || fail "the package holds no presets under /usr/share/widelab/presets"
count=$(wc -l <<<"$expected")
out=$("$bin/widelab-cli" presets) || fail "widelab-cli presets failed: $out"
folder_line=$(tail -n 1 <<<"$out")
[[ $folder_line == "$count presets in $share/presets" ]] ||
  fail "the installed widelab-cli did not read the installed presets; it says: '$folder_line'"
listed=$(sed '1,2d;$d' <<<"$out" | awk '{print $1}' | LC_ALL=C sort)
[[ $listed == "$expected" ]] || fail "widelab-cli presets lists other names than the package holds: $(diff <(echo "$expected") <(echo "$listed"))"
"$bin/widelab-cli" params widenet >/dev/null || fail "widelab-cli params widenet failed from the installed tree"

# The control: the same program with the installed presets gone must not claim
# them (it falls back to the source tree, or fails), or the check above proves nothing.
mv "$share/presets" "$root/presets-moved"
out=$("$bin/widelab-cli" presets 2>&1) || true
[[ $(tail -n 1 <<<"$out") != *" in $share/presets" ]] || fail "widelab-cli claims presets in a folder that is gone"
mv "$root/presets-moved" "$share/presets"

# The studies: a study only the installed folder holds is listed.
first_study=$(find "$share/studies" -maxdepth 1 -name '*.json' | LC_ALL=C sort | head -n 1)
[[ -n $first_study ]] || fail "the package holds no studies under /usr/share/widelab/studies"
cp "$first_study" "$share/studies/installed-tree-probe.json"
out=$("$bin/widelab-cli" study --list) || fail "widelab-cli study --list failed: $out"
grep -q '^installed-tree-probe ' <<<"$out" || fail "widelab-cli study --list did not read the installed studies: $out"

version_line=$("$bin/widelab-cli" --version)
[[ $version_line == "widelab-cli $version "* ]] || fail "widelab-cli --version: '$version_line'"
if [[ $gui == ON ]]; then
  version_line=$(QT_QPA_PLATFORM=offscreen "$bin/widelab" --version)
  [[ $version_line == "WideLab $version" ]] || fail "widelab --version: '$version_line'"
fi
echo "installed package: $count presets read from the unpacked /usr/share/widelab; programs start from there"
