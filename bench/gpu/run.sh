#!/usr/bin/env bash
# Run THERE, in one device call (bench/gpu/prepare.sh printed it): builds core,
# CLI and tests against the machine's Python torch with the carried Debian
# packages, runs the test suite, trains each paper-scale preset for a few
# hundred steps, and benchmarks bf16 training at d_model 1024 against eager
# PyTorch and torch.compile. Every part is time-boxed, so one part running
# long cannot lose the others' results; what is done so far is always in $OUT:
#
#   $OUT/run.log       everything this script printed, as it went
#   $OUT/results.json  every figure (bench/gpu/report.py turns it into tables)
#   $OUT/summary.md    those tables, for docs/gpu.md
#   $OUT/logs.tar.gz   each command's own log
#
# Settings (environment), for the device call and for trying it on a CPU:
#   OUT                    where results go (required; the device call sets it)
#   WIDELAB_GPU_DEVICE     cuda (default), cuda:N or cpu
#   WIDELAB_GPU_SMOKE      1: tiny models, few steps, quick tests only, torch.compile
#                          for the first family only (a rehearsal on a CPU)
#   WIDELAB_GPU_PYTHON     the Python with torch (default python3)
#   WIDELAB_GPU_BUDGET_S   seconds for the whole script (default 530)
#   WIDELAB_GPU_JOBS       build and test parallelism (default: every core)
#   WIDELAB_GPU_CARRY      the carried folder (default .gpu-carry)
#   WIDELAB_GPU_BUILD      build folder (default build-gpu)
#   WIDELAB_GPU_LAUNCHER   compiler launcher, e.g. ccache (default none)
#   WIDELAB_GPU_ARCH       TORCH_CUDA_ARCH_LIST (default 9.0: H100/H200)
#   WIDELAB_GPU_BATCH, WIDELAB_GPU_SEQ   benchmark shape (default 8 x 1024)
#   WIDELAB_GPU_PEAK_TFLOPS  nominal dense bf16 peak (default: from the GPU's name)
#   WIDELAB_GPU_STAGES     the stages to run (default "setup build test train bench");
#                          without "test", only widelab-cli is built
#   WIDELAB_GPU_TESTS      test executables to build and run in the test stage (default: all of
#                          them), e.g. "tst_cuda": a quick stage when the budget is short
#   WIDELAB_GPU_FAMILIES   benchmark families to run (default all five, e.g. "widenet vit-moe")
#   WIDELAB_GPU_PRESETS    paper-scale presets to train (default every resources/presets/*-paper.json,
#                          e.g. "vit-moe-b-paper widenet-vit-b-4e-paper"); the others' records stay
#   WIDELAB_GPU_TRAIN_GRAPH  1: the presets train with train.cuda_graph (steps recorded and replayed)
#   WIDELAB_GPU_TRAIN_S    seconds for the training stage (default 170; each preset 60 at most,
#                          or this over the number of presets when WIDELAB_GPU_PRESETS is set)
#   WIDELAB_GPU_SIDES      benchmark sides, in order (default "eager compile-ro widelab graph compile
#                          compile-mat hand"): widelab, and graph (WideLab's step captured once as a
#                          CUDA graph and replayed); PyTorch as written today (bench/widelab_torch.py:
#                          SDPA, grouped experts, fused AdamW) eager, and compiled in the default
#                          mode (compile), reduce-overhead (compile-ro, CUDA graphs) and
#                          max-autotune-no-cudagraphs (compile-mat); hand: the earlier, hand-written
#                          baseline (--hand-written), so that older figures stay comparable;
#                          widelab-ops: widelab routing, dispatching and combining by LibTorch's
#                          operators, not its own kernels
#   WIDELAB_GPU_KERNELS    entries of the kernel profile of one more step that the widelab, eager,
#                          compile and compile-ro sides add to their records (`--kernels`; default 30,
#                          0: none)
set -euo pipefail
set -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
: "${OUT:?OUT must name the folder whose files come back}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

device=${WIDELAB_GPU_DEVICE:-cuda}
smoke=${WIDELAB_GPU_SMOKE:-0}
python=$(command -v "${WIDELAB_GPU_PYTHON:-python3}") || { echo "run.sh: no ${WIDELAB_GPU_PYTHON:-python3}" >&2; exit 1; }
budget=${WIDELAB_GPU_BUDGET_S:-530}
jobs=${WIDELAB_GPU_JOBS:-$(nproc)}
carry=$(realpath -m "${WIDELAB_GPU_CARRY:-$root/.gpu-carry}")
build=$(realpath -m "${WIDELAB_GPU_BUILD:-$root/build-gpu}")
launcher=${WIDELAB_GPU_LAUNCHER:-}
arch=${WIDELAB_GPU_ARCH:-9.0}
stages=" ${WIDELAB_GPU_STAGES:-setup build test train bench} "
start_epoch=$(date +%s)
deadline=$((start_epoch + budget))

work=$build/gpu-run          # records the report is assembled from
logs=$work/logs              # each command's own log
prefix=$build/prefix         # the carried .debs, unpacked
cli=$build/app/cli/widelab-cli
# A later call on the same (still warm) machine keeps the earlier calls'
# records, so its results.json holds every stage run so far; only the records
# of the stages this call runs are cleared.
mkdir -p "$work/stages" "$work/bench" "$work/train" "$work/configs" "$logs"
for stage in $stages; do
  rm -f "$work/stages/$stage.json"
  case $stage in
    train) [[ -n ${WIDELAB_GPU_PRESETS:-} ]] || { rm -rf "$work/train" && mkdir -p "$work/train"; } ;;
    bench) [[ -n ${WIDELAB_GPU_FAMILIES:-} ]] || { rm -rf "$work/bench" && mkdir -p "$work/bench"; } ;;
  esac
done

# Everything printed from here on also goes to $OUT/run.log as it is printed.
exec > >(tee -a "$OUT/run.log") 2>&1

if [[ $smoke == 1 ]]; then
  batch=${WIDELAB_GPU_BATCH:-2} seq=${WIDELAB_GPU_SEQ:-64} bench_steps=2 bench_warmup=1
  train_steps=20 test_args=(-L quick)
else
  batch=${WIDELAB_GPU_BATCH:-8} seq=${WIDELAB_GPU_SEQ:-1024} bench_steps=10 bench_warmup=3
  train_steps=300 test_args=()
fi

log() { printf '[%4ds] %s\n' "$(($(date +%s) - start_epoch))" "$*"; }
seconds_left() { echo $((deadline - $(date +%s))); }
# The smaller of a stage's own cap and the time left before `reserve` seconds remain.
cap() {
  local own=$1 reserve=$2 left
  left=$(($(seconds_left) - reserve))
  ((left < own)) && own=$left
  ((own < 0)) && own=0
  echo "$own"
}
has_stage() { [[ $stages == *" $1 "* ]]; }
# Seconds the stages before the benchmarks leave for them (15 without them):
# about 10 s for each family's WideLab side, 45 s for a PyTorch side (its
# compilation), at most 150. A short call (WideLab's side of a few families
# on a leftover budget) so keeps its build, which a fixed 150 s starved.
bench_reserve() {
  has_stage bench || { echo 15; return; }
  local seconds=15 family side
  for family in ${WIDELAB_GPU_FAMILIES:-${families[*]%%:*}}; do
    for side in ${WIDELAB_GPU_SIDES:-$default_sides}; do
      case $side in
        widelab | graph | widelab-ops) seconds=$((seconds + 10)) ;;
        *) seconds=$((seconds + 45)) ;;
      esac
    done
  done
  echo $((seconds < 150 ? seconds : 150))
}

# stage_record NAME STATUS SECONDS NOTE: one stage's outcome, for results.json.
stage_record() {
  "$python" - "$work/stages/$1.json" "$1" "$2" "$3" "$4" <<'PY'
import json, sys
path, name, status, seconds, note = sys.argv[1:]
json.dump({"stage": name, "status": status, "seconds": float(seconds), "note": note}, open(path, "w"))
PY
}

# Turns the records into results.json and summary.md, and packs the logs:
# after every stage, so that a kill leaves the latest of each in $OUT.
publish() {
  "$python" bench/gpu/report.py collect "$work" --out "$OUT/results.json" >/dev/null \
    || log "report.py collect failed (see run.log)"
  "$python" bench/gpu/report.py markdown "$OUT/results.json" >"$OUT/summary.md.tmp" \
    && mv "$OUT/summary.md.tmp" "$OUT/summary.md" || log "report.py markdown failed (see run.log)"
  rm -f "$OUT/summary.md.tmp"
  tar -czf "$OUT/logs.tar.gz.tmp" -C "$work" logs stages configs 2>/dev/null \
    && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz" || true
}

# run_boxed SECONDS LOG COMMAND...: runs a command with a time limit (SIGINT
# first, so a trainer saves and stops; SIGKILL 15 s later), its output in LOG.
# Prints the exit status; 124 means it ran out of time.
run_boxed() {
  local limit=$1 logfile=$2 rc=0
  shift 2
  if ((limit <= 0)); then
    echo "skipped: no time left" >"$logfile"
    echo 125
    return
  fi
  timeout -s INT -k 15 "$limit" "$@" >"$logfile" 2>&1 || rc=$?
  echo "$rc"
}

describe_rc() {
  case $1 in
    0) echo ok ;;
    124 | 137) echo "timed out" ;;
    125) echo "skipped (no time left)" ;;
    *) echo "failed (exit $1)" ;;
  esac
}

# ---------------------------------------------------------------- setup
# Unpacks the carried .debs into $prefix, keeping only the libraries this
# machine lacks (its own, newer ones win), then configures the build.
unpack_carried() {
  local debs=$carry/debs libdir
  [[ -d $debs ]] || { log "no $debs: run bench/gpu/prepare.sh here first and carry ${carry##*/}"; return 1; }
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$prefix" 2>/dev/null || dpkg -x "$deb" "$prefix" \
      || { log "cannot unpack $deb (dpkg-deb missing?)"; return 1; }
  done
  libdir=$prefix/usr/lib/x86_64-linux-gnu
  # Where the machine has a library's own headers, the carried copy of that
  # library goes: CMake would otherwise pair one's headers with the other's
  # library (libjpeg: "Wrong JPEG library version: library is 62, caller
  # expects 80", its version being in the arch-specific jconfig.h).
  if [[ -e /usr/include/jpeglib.h ]]; then
    rm -f "$libdir"/libjpeg.* "$prefix"/usr/include/j{peglib,error,morecfg,pegint}.h \
      "$prefix"/usr/include/x86_64-linux-gnu/jconfig.h
    log "carried libjpeg dropped: the machine has its own headers"
  fi
  local host_libs kept=() dropped=()
  # ldconfig lives in /sbin, which a non-root PATH may lack; without it every
  # carried library is kept.
  host_libs=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk '{print $1}' || true)
  for lib in "$libdir"/lib*.so.*; do
    local name=${lib##*/}
    case $name in libQt6* | libfmt* | libspdlog*) kept+=("$name"); continue ;; esac
    if grep -qxF "$name" <<<"$host_libs"; then
      rm -f "$lib"
      dropped+=("$name")
    else
      kept+=("$name")
    fi
  done
  log "carried libraries used: ${kept[*]}"
  log "carried libraries the host has already (host's used): ${dropped[*]:-none}"
  export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  "$prefix/usr/lib/qt6/libexec/moc" -v || { log "the carried moc does not run here"; return 1; }
}

dpkg_deb_fallback() {
  # Without dpkg-deb, unpack with ar and tar (a .deb is an ar archive).
  command -v dpkg-deb >/dev/null || command -v dpkg >/dev/null && return 0
  dpkg-deb() {
    local deb=$2 dest=$3 tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && ar x "$deb") && tar -xf "$tmp"/data.tar.* -C "$dest"
    local rc=$?
    rm -rf "$tmp"
    return $rc
  }
}

report_environment() {
  log "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME")"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  "$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' \
    | tee "$work/torch.txt"
  g++ --version | head -1 || true
  cmake --version | head -1
  ninja --version
  command -v nvcc >/dev/null && nvcc --version | tail -2 || true
}

configure() {
  local torch_prefix torch_root qt_cmake=$prefix/usr/lib/x86_64-linux-gnu/cmake
  torch_prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') \
    || { echo "run.sh: $python cannot import torch"; return 1; }
  # TorchConfig looks for libtorch.so without NO_DEFAULT_PATH: a system LibTorch
  # would win over the Python one unless the torch package's root (its lib/)
  # comes first. The carried packages are named one by one, so that a system
  # copy cannot win either.
  torch_root=$(cd "$torch_prefix/../.." && pwd)
  rm -f "$build/CMakeCache.txt"  # found libraries are cached: look for them afresh
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DWIDELAB_GUI=OFF -DWIDELAB_TESTS=ON \
    -DCMAKE_PREFIX_PATH="$torch_root;$torch_prefix;$prefix/usr;$qt_cmake" \
    -DQt6_DIR="$qt_cmake/Qt6" -Dspdlog_DIR="$qt_cmake/spdlog" -Dfmt_DIR="$qt_cmake/fmt" \
    -Dnlohmann_json_DIR="$prefix/usr/share/cmake/nlohmann_json" \
    -DTORCH_CUDA_ARCH_LIST="$arch" -DWIDELAB_REFERENCE_PYTHON="$python" \
    ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} || return 1
  # Where each package came from: the carried prefix, or not.
  grep -E '^(Qt6_DIR|Qt6Core_DIR|Qt6Test_DIR|spdlog_DIR|fmt_DIR|nlohmann_json_DIR|Torch_DIR|TORCH_LIBRARY):' "$build/CMakeCache.txt" \
    | tee "$work/packages.txt"
  if grep -vE 'Torch_DIR|TORCH_LIBRARY' "$work/packages.txt" | grep -vqF "$prefix"; then
    log "warning: a package was found outside the carried prefix (above)"
  fi
  grep -q "^TORCH_LIBRARY:FILEPATH=$torch_root/" "$work/packages.txt" \
    || { echo "run.sh: libtorch.so was not taken from $torch_root (above)"; return 1; }
}

stage_setup() {
  local t0=$SECONDS rc=0
  log "== setup: environment, carried packages, configure"
  report_environment 2>&1 | tee "$logs/environment.log"
  dpkg_deb_fallback
  unpack_carried 2>&1 | tee "$logs/unpack.log" || rc=1
  if ((rc == 0)); then
    # unpack_carried ran in a pipeline's subshell: export its library path here.
    export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    configure >"$logs/configure.log" 2>&1 || rc=2
    grep -E '^-- (Found Torch|WideLab: LibTorch)|CMake Error' "$logs/configure.log" || true
    tail -8 "$logs/configure.log"
  fi
  case $rc in
    0) stage_record setup ok $((SECONDS - t0)) "" ;;
    1) stage_record setup failed $((SECONDS - t0)) "unpacking the carried packages failed (logs/unpack.log)" ;;
    *) stage_record setup failed $((SECONDS - t0)) "cmake configure failed (logs/configure.log)" ;;
  esac
  publish
  return $((rc != 0))
}

# ---------------------------------------------------------------- build
build_targets() { # LOG LIMIT TARGET...
  local logfile=$1 limit=$2
  shift 2
  run_boxed "$limit" "$logfile" cmake --build "$build" --parallel "$jobs" --target "$@"
}

# ---------------------------------------------------------------- tests
stage_test() {
  local t0=$SECONDS limit rc note
  limit=$(cap "${WIDELAB_GPU_TEST_S:-110}" "$(bench_reserve)")
  local parallel=$((jobs / 4 > 1 ? jobs / 4 : 1))
  local only=()
  [[ -n ${WIDELAB_GPU_TESTS:-} ]] && only=(-R "^($(echo "$WIDELAB_GPU_TESTS" | tr ' ' '|'))\$")
  log "== test: ctest ${test_args[*]} ${only[*]} (${limit} s at most)"
  rc=$(run_boxed "$limit" "$logs/ctest.log" ctest --test-dir "$build" --output-on-failure \
    -j "$parallel" --timeout "$limit" "${test_args[@]}" "${only[@]}")
  tail -25 "$logs/ctest.log"
  note=$(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -1 || true)
  stage_record test "$(describe_rc "$rc")" $((SECONDS - t0)) "$note"
  publish
}

# ---------------------------------------------------------------- training
# The preset as a run document: in smoke mode shrunk to seconds on a CPU; a
# task file this machine lacks replaced by its carried copy.
train_config() { # PRESET -> prints a config path
  "$python" - "$root/resources/presets/$1.json" "$work/configs/train-$1.json" "$carry/files" "$smoke" <<'PY'
import json, os, sys
source, target, carried, smoke = sys.argv[1:]
doc = json.load(open(source))
task = doc.get("task", {})
if task.get("path") and not os.path.exists(task["path"]):
    task["path"] = os.path.join(carried, os.path.basename(task["path"]))
if smoke == "1":
    m = doc["model"]
    m.update(d_model=32, heads=min(m.get("heads", 4), 4), ffn_dim=64, layers=min(m.get("layers", 2), 2),
             max_len=min(m.get("max_len", 64), 64))
    m.pop("head_dim", None)
    if m.get("embedding_dim"):
        m["embedding_dim"] = 16
    task.setdefault("kind", "listops")
    if task["kind"] == "listops":
        task.update(train_size=400, validation_size=50, test_size=50, max_length=48)
    else:
        task["vocab_limit"] = 500
        m["vocab_size"] = 500
    doc["train"] = {"batch_size": 8, "eval_every": 10, "eval_batches": 2, "checkpoint_every": 10, "log_every": 2,
                    "warmup_steps": 5}
doc["task"] = task
if os.environ.get("WIDELAB_GPU_TRAIN_GRAPH") == "1":
    doc.setdefault("train", {})["cuda_graph"] = True
json.dump(doc, open(target, "w"), indent=1)
print(target)
PY
}

stage_train() { # runs in the background while the tests build and run
  local t0=$SECONDS stop_at presets=() n i=0
  stop_at=$(($(date +%s) + $(cap "${WIDELAB_GPU_TRAIN_S:-170}" "$(bench_reserve)")))
  if [[ -n ${WIDELAB_GPU_PRESETS:-} ]]; then
    # Chosen presets (those a shorter run left without a falling loss) get the whole time between them.
    for preset in $WIDELAB_GPU_PRESETS; do
      [[ -f resources/presets/$preset.json ]] || { log "train: no preset $preset in resources/presets"; continue; }
      presets+=("$preset")
      rm -rf "${work:?}/train/$preset" "$work/train/$preset.status.json"
    done
  else
    for f in resources/presets/*-paper.json; do presets+=("$(basename "$f" .json)"); done
  fi
  n=${#presets[@]}
  log "== train: ${n} paper-scale presets, ${train_steps} steps each, until $((stop_at - start_epoch)) s"
  for preset in "${presets[@]}"; do
    local left=$((stop_at - $(date +%s))) share config rc estimate
    share=$((left / (n - i)))
    # Every preset: 60 s at most each; chosen ones share the whole time.
    [[ -z ${WIDELAB_GPU_PRESETS:-} ]] && ((share > 60)) && share=60
    i=$((i + 1))
    config=$(train_config "$preset")
    rc=$(run_boxed "$share" "$logs/train-$preset.log" "$cli" train "$config" --out "$work/train/$preset" \
      --steps "$train_steps" --device "$device")
    # The configuration panel's estimate for this run on a GPU, to set against the measured peak.
    estimate=$("$cli" params "$config" --json 2>/dev/null \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin).get("training_memory_bytes", {}).get("cuda", "null"))' \
      || echo null)
    echo "{\"preset\": \"$preset\", \"status\": \"$(describe_rc "$rc")\", \"limit_s\": $share, \"estimated_memory_bytes\": $estimate," \
      "\"cuda_graph\": $([[ ${WIDELAB_GPU_TRAIN_GRAPH:-0} == 1 ]] && echo true || echo false)}" \
      >"$work/train/$preset.status.json"
    log "train $preset: $(describe_rc "$rc") ($share s at most) $(tail -1 "$logs/train-$preset.log" | cut -c1-120)"
  done
  stage_record train ok $((SECONDS - t0)) "$(has_stage test && echo "ran beside the test build and ctest" || echo "ran alone")"
}

# ---------------------------------------------------------------- benchmarks
# WIDELAB_GPU_SIDES's default, in order.
default_sides="eager compile-ro widelab graph compile compile-mat hand"
families=(
  "deep-6x8:bench/configs/transformer-6x8-d1024.json"
  "wide-1x48:bench/configs/transformer-1x48-d1024.json"
  "widenet:bench/configs/widenet-d1024.json"
  "vit-moe:bench/configs/vit-moe-d1024.json"
  "multipath:bench/configs/multipath-6x4-d1024.json"
)

# In smoke mode each benchmark config shrinks to seconds on a CPU.
bench_config() { # CONFIG -> prints a config path
  if [[ $smoke != 1 ]]; then
    echo "$root/$1"
    return
  fi
  "$python" - "$root/$1" "$work/configs/bench-$(basename "$1")" <<'PY'
import json, sys
source, target = sys.argv[1:]
doc = json.load(open(source))
m = doc["model"]
m.update(d_model=64, heads=min(m["heads"], 8), head_dim=8, ffn_dim=128, layers=min(m["layers"], 2),
         vocab_size=min(m["vocab_size"], 256))
if m.get("embedding_dim"):
    m["embedding_dim"] = 32
json.dump(doc, open(target, "w"), indent=1)
print(target)
PY
}

nominal_peak() {
  [[ -n ${WIDELAB_GPU_PEAK_TFLOPS:-} ]] && { echo "$WIDELAB_GPU_PEAK_TFLOPS"; return; }
  # Dense bf16 tensor-core peaks from NVIDIA's data sheets.
  case $(cat "$work/torch.txt" 2>/dev/null) in
    *"H100 PCIe"*) echo 756 ;;
    *"H100 NVL"*) echo 835 ;;
    *H100* | *H200*) echo 989 ;;
    *) echo "" ;;
  esac
}

stage_bench() {
  local t0=$SECONDS peak precision=() peak_args=() compile_first_only=0
  peak=$(nominal_peak)
  [[ -n $peak ]] && peak_args=(--peak-tflops "$peak")
  # bf16 autocast on a GPU; the CPU rehearsal runs it too, to exercise the path.
  precision=(--bf16)
  [[ $smoke == 1 ]] && compile_first_only=1
  local common=(--device "$device" "${precision[@]}" --mode train --batch "$batch" --seq "$seq"
    --steps "$bench_steps" --warmup "$bench_warmup" --json)
  # One more step under the profiler: the operators and kernels the device's
  # time goes to (WIDELAB_GPU_KERNELS entries; 0: none), for WideLab's step
  # and the PyTorch sides', not for graph replays.
  local kernels=()
  [[ ${WIDELAB_GPU_KERNELS:-30} -gt 0 ]] && kernels=(--kernels "${WIDELAB_GPU_KERNELS:-30}")
  log "== bench: ${#families[@]} families, batch $batch x $seq, bf16, on $device, nominal peak ${peak:-none} TFLOP/s"
  # Side by side, not family by family, the sides never measured first (issue
  # 39's baseline as a PyTorch user writes it today, eager and with CUDA
  # graphs), then WideLab's own, then the other compiled modes and the earlier
  # hand-written baseline, so that a budget that runs out costs figures on
  # record rather than ones that are not.
  local wanted=" ${WIDELAB_GPU_FAMILIES:-${families[*]%%:*}} "
  for side in ${WIDELAB_GPU_SIDES:-$default_sides}; do
    local k=0
    for entry in "${families[@]}"; do
      local family=${entry%%:*} config limit cmd rc
      [[ $wanted == *" $family "* ]] || continue
      config=$(bench_config "${entry#*:}")
      k=$((k + 1))
      case $side in
        widelab) limit=$(cap 60 10) cmd=("$cli" bench "$config" "${common[@]}" "${peak_args[@]}" "${kernels[@]}") ;;
        eager) limit=$(cap 75 10) cmd=("$python" bench/widelab_torch.py "$config" "${common[@]}" "${kernels[@]}") ;;
        compile) limit=$(cap 120 10)
          cmd=("$python" bench/widelab_torch.py "$config" "${common[@]}" "${kernels[@]}" --compile) ;;
        compile-ro) limit=$(cap 120 10)
          cmd=("$python" bench/widelab_torch.py "$config" "${common[@]}" "${kernels[@]}" --compile reduce-overhead) ;;
        compile-mat) limit=$(cap 180 10)
          cmd=("$python" bench/widelab_torch.py "$config" "${common[@]}" --compile max-autotune-no-cudagraphs) ;;
        hand) limit=$(cap 75 10) cmd=("$python" bench/widelab_torch.py "$config" "${common[@]}" --hand-written) ;;
        graph) limit=$(cap 60 10) cmd=("$cli" bench "$config" "${common[@]}" "${peak_args[@]}" --cuda-graph) ;;
        # WideLab routing, dispatching and combining by LibTorch's operators
        # instead of its own kernels (docs/model.md), for what they bring.
        widelab-ops) limit=$(cap 60 10)
          cmd=(env WIDELAB_DISABLE=fused_routing,fused_expert_rows "$cli" bench "$config" "${common[@]}" "${peak_args[@]}") ;;
        *) log "unknown benchmark side $side"; continue ;;
      esac
      if [[ $side == graph && $device == cpu ]]; then
        echo "{\"status\": \"skipped (a CUDA graph needs a GPU)\"}" >"$work/bench/$family.$side.status.json"
        continue
      fi
      if [[ $side == widelab-ops ]] && ! "$python" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["model"].get("experts", 1) <= 1)' "$config"; then
        echo "{\"status\": \"skipped (no mixture to route)\"}" >"$work/bench/$family.$side.status.json"
        continue
      fi
      if [[ $side == compile* && $compile_first_only == 1 && $k -gt 1 ]]; then
        echo "{\"status\": \"skipped (smoke: torch.compile on a CPU takes minutes; first family only)\"}" \
          >"$work/bench/$family.$side.status.json"
        continue
      fi
      export WIDELAB_CLI=$cli
      rc=$(run_boxed "$limit" "$logs/bench-$family-$side.log" "${cmd[@]}")
      # The JSON is the command's standard output; warnings went to the same log.
      "$python" - "$logs/bench-$family-$side.log" "$work/bench/$family.$side.json" <<'PY' || true
import json, sys
text = open(sys.argv[1]).read()
start = text.find("\n{") + 1 if not text.startswith("{") else 0
try:
    json.dump(json.JSONDecoder().raw_decode(text[start:])[0], open(sys.argv[2], "w"))
except ValueError:
    pass
PY
      echo "{\"status\": \"$(describe_rc "$rc")\", \"limit_s\": $limit, \"config\": \"${entry#*:}\"}" \
        >"$work/bench/$family.$side.status.json"
      log "bench $family $side: $(describe_rc "$rc") ($limit s at most)"
      publish
    done
  done
  stage_record bench ok $((SECONDS - t0)) ""
}

# ---------------------------------------------------------------- the run
log "WideLab GPU suite: device $device, smoke $smoke, budget $budget s, $jobs jobs, python $python"
git -C "$root" log -1 --format='commit %H %s' 2>/dev/null || true
echo "{\"device\": \"$device\", \"smoke\": $smoke, \"budget_s\": $budget, \"batch\": $batch, \"sequence\": $seq," \
  "\"started\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)\"}" \
  >"$work/meta.json"

if has_stage setup; then
  stage_setup || { log "setup failed: nothing can be built"; exit 1; }
else
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

train_pid=""
if has_stage build; then
  log "== build: widelab-cli first, so training can start while the tests build"
  t0=$SECONDS
  rc=$(build_targets "$logs/build-cli.log" "$(cap 330 "$(bench_reserve)")" widelab-cli)
  tail -3 "$logs/build-cli.log"
  if [[ $rc != 0 ]]; then
    grep -m 20 -E 'error|Error' "$logs/build-cli.log" || true
    stage_record build "$(describe_rc "$rc")" $((SECONDS - t0)) "widelab-cli did not build (logs/build-cli.log)"
    publish
    exit 1
  fi
  if has_stage train; then
    stage_train >"$logs/train-stage.log" 2>&1 &
    train_pid=$!
  fi
  if has_stage test; then
    # shellcheck disable=SC2086  # the list is words
    rc=$(build_targets "$logs/build-all.log" "$(cap 300 "$(bench_reserve)")" ${WIDELAB_GPU_TESTS:-all})
    tail -3 "$logs/build-all.log"
    [[ $rc == 0 ]] || grep -m 20 -E 'error|Error' "$logs/build-all.log" || true
  fi
  stage_record build "$(describe_rc "$rc")" $((SECONDS - t0)) \
    "$([[ $rc == 0 ]] || echo "tests did not all build (logs/build-all.log)")"
  publish
elif has_stage train; then
  stage_train >"$logs/train-stage.log" 2>&1 &
  train_pid=$!
fi

has_stage test && stage_test

if [[ -n $train_pid ]]; then
  log "waiting for training to finish"
  wait "$train_pid" || log "the training stage failed (logs/train-stage.log)"
  cat "$logs/train-stage.log"
  publish
fi

has_stage bench && stage_bench

publish
log "done in $(($(date +%s) - start_epoch)) s; results in $OUT"
cat "$OUT/summary.md" 2>/dev/null || true
