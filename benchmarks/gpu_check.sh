#!/usr/bin/env bash
# One prepared GPU check (issues 10 and 11), at most 9 minutes, for a session lent a CUDA
# machine like the H200 one (Python 3.12, torch + cupy, no dask, no RAPIDS, no network).
#
#   here, once:  bash benchmarks/fetch_gpu_wheels.sh      # .whl/: pinned wheels + MiniLM tokenizer
#   there:       bash benchmarks/gpu_check.sh             # the device run tool: carry [".whl"]
#   here, dry:   GPU_CHECK_DRY=1 bash benchmarks/gpu_check.sh   # same steps, tiny, --device cpu
#   a rerun:     GPU_CHECK_ONLY="proxy-lm cluster" bash benchmarks/gpu_check.sh   # these steps only (the
#                data steps' output kept under GPU_CHECK_WORK from the first run); steps.tsv appended
#
# Each step runs under its own `timeout` (a hang cannot eat the rest) and inside one total
# budget (GPU_CHECK_SECONDS, default 540 s; a step that would not fit is skipped). Logs, one
# JSON per step and gpu.md (the table, with the targets) go to $OUT (default
# benchmarks/results-gpu); a real run also writes benchmarks/results/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
out=${OUT:-benchmarks/results-gpu}
work=${GPU_CHECK_WORK:-/tmp/datamask-gpu-check}
budget=${GPU_CHECK_SECONDS:-540}
dry=${GPU_CHECK_DRY:-0}
start=$SECONDS
mkdir -p "$out" "$work"
only=${GPU_CHECK_ONLY:-}
[ -z "$only" ] && : > "$out/steps.tsv"
if [ "$dry" = 1 ]; then
  dev=cpu; rows=20000; files=2; split=10000; k=8; short=48; long=6; smoke_rows=4000; md=""
else
  dev=gpu; rows=2000000; files=2; split=1000000; k=1000; short=60000; long=12000; smoke_rows=200000
  md=benchmarks/results/gpu.md
fi

step() {  # step NAME SECONDS COMMAND...: under its own timeout, inside the total budget
  local name=$1 limit=$2 left t0 rc
  shift 2
  if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then return; fi
  left=$(( budget - (SECONDS - start) ))
  (( limit > left )) && limit=$left
  if (( limit < 15 )); then
    printf '%s\tskip\t0\n' "$name" >> "$out/steps.tsv"; echo "== $name: skipped (out of time)"; return
  fi
  echo "== $name (at most ${limit} s)"
  t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  tail -n 3 "$out/$name.log"
}

# --- 0. dask and its needs from .whl/ when this machine lacks them (offline, no deps resolved)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ! "$PY" -c "import dask, distributed" 2>/dev/null; then
  need=$("$PY" benchmarks/gpu_bench.py wheels --dir .whl)
  if [ -z "$need" ]; then echo "dask is missing and .whl/ has no wheel for it: run benchmarks/fetch_gpu_wheels.sh"; fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $need \
    && export PYTHONPATH=/tmp/site:$PYTHONPATH
fi

# --- 1. the machine and the level datamask picks on it
if [ "$dry" = 1 ]; then echo "dry run on CPU ($(nproc) cores)" > "$out/gpu.txt"
else
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } > "$out/gpu.txt" 2>&1
  step level 30 "$PY" -c "from datamask.runtime.gpu import select_level as s; print(s('gpu').to_dict())"
  cat "$out/level.log" >> "$out/gpu.txt"
fi

# --- 2. data: a 2M-row float16 d=384 corpus (two 1M-row files), short and long texts, the model
step corpus 90 "$PY" benchmarks/gpu_bench.py corpus --rows "$rows" --files "$files" --out "$work/corpus"
step texts 45 "$PY" benchmarks/gpu_bench.py texts --short "$short" --long "$long" --out "$work/texts"
step model 60 "$PY" benchmarks/gpu_bench.py model --minilm .whl/minilm --out "$work/minilm"
model=$(tail -n 1 "$out/model.log" 2> /dev/null)
export DATAMASK_TEST_MODEL=$model

# --- 3. the GPU tests (optimizer, policy, pipeline, embedding on CUDA)
if [ "$dry" != 1 ]; then
  step gpu-tests 180 "$PY" -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors \
    tests/core tests/estimator tests/runtime tests/pipeline tests/features
fi

# --- 4. the optimizer benchmark (issue 10): pg step with and without graph capture, time to 99% of
#        relaxed's gain at 100k and 1M rows, largest fall between evaluation points, facility location
#        at 100k (the G x batch sweep comes after the pipeline steps, step 8: the pipeline's only
#        figures must not be the ones a long sweep leaves no time for)
if [ "$dry" = 1 ]; then
  step optimizer 120 "$PY" benchmarks/optimizer.py --device cpu --sizes 5000 --metrics pairwise facility \
    --no-lr-sweep --no-extras --pg-cap 3 --big 20000 --big-steps 50 --big-budget 3 --out "$out/optimizer"
else
  step optimizer 150 "$PY" benchmarks/optimizer.py --device gpu --sizes 100000 --metrics pairwise facility \
    --no-lr-sweep --pg-cap 15 --big 1000000 --big-steps 1000 --big-budget 12 --out "$out/optimizer"
fi

# --- 5. datamask select --device gpu, relaxed and datamask: rows/s per GPU, peak GPU memory per split
for method in relaxed datamask; do
  step "select-$method" 100 "$PY" benchmarks/gpu_bench.py select --corpus "$work/corpus" --method "$method" \
    --split-size "$split" --device "$dev" --out "$out" --work "$work"
done
# the same relaxed select with the redundancy filter off: the first H200 run's select was bound by
# what surrounds the solver, and on the CPU the filter is most of it (docs/gpu.md)
step select-relaxed-no-filter 100 "$PY" benchmarks/gpu_bench.py select --corpus "$work/corpus" --method relaxed \
  --near-duplicate null --name select_relaxed_no_filter --split-size "$split" --device "$dev" --out "$out" --work "$work"

# --- 6. datamask embed --device gpu: texts/s, short and long (warm embedder and the command)
step embed 120 "$PY" benchmarks/gpu_bench.py embed --texts "$work/texts" --model "$model" --device "$dev" \
  --out "$out" --work "$work"

# --- 7. datamask cluster --device gpu --k 1000 on 1M rows: seconds. Four 250k-row partitions, as a
#        corpus of many splits has: the output rewrites every row's embedding, and Parquet encodes a
#        float16 list column at ~0.1M rows/s per core (one partition would leave the other cores idle)
step cluster 90 "$PY" benchmarks/gpu_bench.py cluster --corpus "$work/corpus" --k "$k" --split-size "$((split / 4))" \
  --device "$dev" --out "$out" --work "$work"

# --- 8. the G x batch sweep from which the GPU defaults are to be chosen (issue 10)
if [ "$dry" = 1 ]; then
  step optimizer-width 60 "$PY" benchmarks/optimizer.py --device cpu --sizes --big --sweep-size 20000 \
    --sweep-groups 64 128 --sweep-batches 512 none --sweep-cap 3 --out "$out/optimizer-width"
else
  step optimizer-width 90 "$PY" benchmarks/optimizer.py --device gpu --sizes --big --sweep-size 1000000 \
    --sweep-groups 128 256 512 1024 --sweep-batches 512 none --sweep-cap 5 --out "$out/optimizer-width"
fi

# --- 9. the proxy-LM presets on CUDA (issue 13): tokens/s of tiny and small (bf16), losses repeat
if [ "$dry" != 1 ]; then
  step proxy-lm 90 "$PY" benchmarks/proxy_lm.py --throughput-only --device cuda --presets tiny small --out "$out"
fi

# --- 10. dask-cuda's LocalCUDACluster, when its wheel is carried: a small select on it
if [ "$dry" != 1 ] && ls .whl/dask_cuda-*.whl > /dev/null 2>&1; then
  step small 30 "$PY" benchmarks/gpu_bench.py corpus --rows "$smoke_rows" --files 1 --out "$work/small"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-cuda .whl/dask_cuda-*.whl
  step dask-cuda 60 env PYTHONPATH=/tmp/site-cuda:$PYTHONPATH "$PY" benchmarks/gpu_bench.py select \
    --corpus "$work/small" --method relaxed --split-size 100000 --device gpu --name select_dask_cuda \
    --out "$out" --work "$work"
fi

# --- 11. the table
"$PY" benchmarks/gpu_bench.py report --out "$out" ${md:+--md "$md" --json benchmarks/results/gpu.json} > /dev/null
echo "== done in $((SECONDS - start)) s: $out/gpu.md"
cat "$out/gpu.md"
