#!/usr/bin/env bash
# Installs what WideLab needs, from Debian 12's packages. Idempotent: asks apt
# only for what is missing. Runs apt-get as root, or via sudo.
#
#   packaging/install-deps.sh        everything: build, run, test, package
#   packaging/install-deps.sh run    only what building and running need (setup-and-run.sh:
#                                    the tests' and the package's tools come with the test command)
set -euo pipefail

run_packages=(
  build-essential cmake ninja-build pkgconf
  libtorch-dev            # LibTorch 1.13, CPU
  libgloo-dev             # Gloo's headers, for c10d's Gloo process group (distributed training)
  libopenblas0-pthread    # without it LibTorch multiplies matrices with the reference BLAS, ~50x slower
  libdnnl-dev             # oneDNN: inference's projections on the CPU (LibTorch 1.13 loads its library already)
  libspdlog-dev nlohmann-json3-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev   # qt6-svg: charts export as SVG
  libpng-dev libjpeg62-turbo-dev   # image tasks: PNG and JPEG files (optional: the build works without)
  zlib1g-dev              # Fashion-MNIST's gzip-compressed IDX files
  dataset-fashion-mnist   # task.kind fashion_mnist: 70,000 labelled 28x28 pictures (30 MB)
  fortunes fortunes-min   # widelab-cli corpus fortunes: short texts in about forty categories
  # the translation corpus (widelab-cli corpus bible) and its tests: the World English Bible,
  # Reina-Valera 1909 and King James SWORD modules, and mod2imp, which reads them
  sword-text-web sword-text-sparv sword-text-kjv libsword-utils
)
test_packages=(
  python3-torch           # the independent reference the tests compare against
  python3-venv            # the tests' PyPI readers live in a venv (install-test-venv.sh)
  help2man librsvg2-bin file       # the .deb: man pages, PNG icons, dpkg-shlibdeps's look at the programs
  desktop-file-utils appstream lintian man-db   # the .deb's checks (tests/packaging)
)
case "${1:-all}" in
  run) packages=("${run_packages[@]}") ;;
  all) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps: unknown argument '$1' (run, or nothing for everything)" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: everything is installed"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
