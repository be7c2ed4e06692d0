#!/usr/bin/env bash
# The first command of the README: install what is missing, build, and train a
# preset (default: widenet; translation-bible first writes its corpus, web-sparv.tsv, and
# fortunes-classifier its texts, fortunes.tsv, bible-sections-bytes its chapters,
# bible-sections.tsv, bible-mlm-bytes the Bible's text, bible.txt, and bible-pairs-bytes
# its pairs of verses, bible-pairs.tsv).
#
# With a display, the desktop app opens and starts training the preset at once
# (new runs go under runs/); without one, or with WIDELAB_CLI=1, the
# command-line trainer trains it into runs/PRESET with a progress bar: Ctrl-C
# saves a checkpoint, and running the command again resumes the run.
set -euo pipefail
cd "$(dirname "$0")/.."
#
# WIDELAB_LIBTORCH=pip builds against PyPI's LibTorch 2.x with CUDA (see
# build.sh), for a machine with an NVIDIA GPU.
preset="${1:-widenet}"
build="$(packaging/build-dir.sh)"
# Only what this command runs is installed and built: the desktop app when there
# is a display, else the command-line trainer alone (the test command adds the rest).
desktop=""
if [[ -z "${WIDELAB_CLI:-}" && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) ]]; then
  desktop=1
fi
packaging/install-deps.sh run
WIDELAB_TARGETS="widelab-cli${desktop:+ widelab}" packaging/build.sh
"$build"/app/cli/widelab-cli params "$preset"
# The translation preset reads the Bible's English-Spanish pairs from ./web-sparv.tsv: written once, offline.
if [[ "$preset" == translation-bible && ! -f web-sparv.tsv ]]; then
  "$build"/app/cli/widelab-cli corpus bible --from web --to sparv --out web-sparv.tsv
fi
# The fortunes classifier reads ./fortunes.tsv, written from Debian's fortunes the same way.
if [[ "$preset" == fortunes-classifier && ! -f fortunes.tsv ]]; then
  "$build"/app/cli/widelab-cli corpus fortunes --out fortunes.tsv
fi
# The long-document classifier reads ./bible-sections.tsv: the World English Bible's chapters.
if [[ "$preset" == bible-sections-bytes && ! -f bible-sections.tsv ]]; then
  "$build"/app/cli/widelab-cli corpus bible-sections --from web --out bible-sections.tsv
fi
# The pair classifier reads ./bible-pairs.tsv: verses of two Bibles, the same or not.
if [[ "$preset" == bible-pairs-bytes && ! -f bible-pairs.tsv ]]; then
  "$build"/app/cli/widelab-cli corpus bible-pairs --from web --to kjv --out bible-pairs.tsv
fi
# Pretraining reads ./bible.txt, the same Bible's chapters as plain text; fine-tuning
# starts from that run, and its classifier reads ./fortunes.tsv.
if [[ "$preset" == bible-mlm-bytes && ! -f bible.txt ]]; then
  "$build"/app/cli/widelab-cli corpus bible-text --from web --out bible.txt
fi
if [[ "$preset" == fortunes-finetune-bytes ]]; then
  if ! compgen -G "runs/bible-mlm-bytes/checkpoints/step-*.pt" >/dev/null; then
    echo "fortunes-finetune-bytes starts from the pretrained runs/bible-mlm-bytes: run packaging/setup-and-run.sh bible-mlm-bytes first" >&2
    exit 1
  fi
  if [[ ! -f fortunes.tsv ]]; then
    "$build"/app/cli/widelab-cli corpus fortunes --out fortunes.tsv
  fi
fi
if [[ -n "$desktop" ]]; then
  exec "$build"/app/gui/widelab "$preset" --train --runs runs
fi
resume=()
if compgen -G "runs/$preset/checkpoints/step-*.pt" >/dev/null; then
  resume=(--resume)
fi
exec "$build"/app/cli/widelab-cli train "$preset" --out "runs/$preset" "${resume[@]}"
