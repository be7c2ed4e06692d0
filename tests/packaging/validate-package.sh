#!/usr/bin/env bash
# The .deb's desktop integration and its policy checks: the menu entry
# (desktop-file-validate), the AppStream metadata (appstreamcli), the icons it
# names, the man pages, and lintian over the whole package, with warnings
# failing as errors do (the package's lintian overrides say why each one left
# is right).
#
# usage: validate-package.sh PACKAGE.deb VERSION GUI(ON|OFF) APP_ID
set -euo pipefail
deb=$1 version=$2 gui=$3 app=$4

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
need() {
  command -v "$1" >/dev/null || fail "$1 is not installed (apt-get install $2; packaging/install-deps.sh installs it)"
}
need lintian lintian
need man man-db
if [[ $gui == ON ]]; then
  need desktop-file-validate desktop-file-utils
  need appstreamcli appstream
fi

[[ -f $deb ]] || fail "$deb: no such package (cmake --build BUILD --target package writes it)"
root=$(mktemp -d "${TMPDIR:-/tmp}/widelab-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"

programs=(widelab-cli)
[[ $gui == ON ]] && programs+=(widelab)
for program in "${programs[@]}"; do
  page=$root/usr/share/man/man1/$program.1.gz
  [[ -f $page ]] || fail "no man page for $program"
  # Rendered as man would, with groff's warnings kept.
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>"$root/man-warnings") || fail "man cannot render $page"
  [[ ! -s $root/man-warnings ]] || fail "$program.1: groff warns: $(cat "$root/man-warnings")"
  grep -q "^NAME" <<<"$text" || fail "$program.1 has no NAME section"
  grep -q "$version" <<<"$text" || fail "$program.1 does not give version $version"
done
man_cli=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$root/usr/share/man/man1/widelab-cli.1.gz")
grep -q "widelab-cli presets" <<<"$man_cli" || fail "widelab-cli.1 lacks the commands of --help"

if [[ $gui == ON ]]; then
  desktop=$root/usr/share/applications/$app.desktop
  [[ -f $desktop ]] || fail "no menu entry $app.desktop"
  desktop-file-validate "$desktop" || fail "desktop-file-validate rejects $app.desktop"
  exec_program=$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$desktop")
  [[ -x $root/usr/bin/${exec_program#/usr/bin/} ]] || fail "the menu entry runs '$exec_program', which the package does not install in /usr/bin"
  icon=$(sed -n 's/^Icon=//p' "$desktop")
  [[ -f $root/usr/share/icons/hicolor/scalable/apps/$icon.svg ]] || fail "no scalable icon named $icon"
  for size in 16 22 24 32 48 64 128 256; do
    png=$root/usr/share/icons/hicolor/${size}x${size}/apps/$icon.png
    [[ -f $png ]] || fail "no ${size}x${size} icon named $icon"
    file "$png" | grep -q "PNG image data, $size x $size," || fail "$png is not a ${size}x${size} PNG: $(file "$png")"
  done

  metainfo=$root/usr/share/metainfo/$app.metainfo.xml
  [[ -f $metainfo ]] || fail "no AppStream metadata $app.metainfo.xml"
  # --no-net: the screenshots' host is the project's site (WIDELAB_HOMEPAGE),
  # which a build machine need not reach.
  appstreamcli validate --no-net --pedantic "$metainfo" || fail "appstreamcli rejects $app.metainfo.xml"
  grep -q "<launchable type=\"desktop-id\">$app.desktop</launchable>" "$metainfo" || fail "the metadata launches another desktop entry"
  grep -q "<release version=\"$version\" date=\"[0-9-]*\">" "$metainfo" || fail "the metadata has no release $version"
fi

# Warnings fail too; overrides in the package (usr/share/lintian/overrides)
# carry the reason for each one kept.
lintian --fail-on error,warning --display-info "$deb" || fail "lintian rejects $(basename "$deb")"
echo "validated: man pages, menu entry, icons, AppStream metadata, lintian"
