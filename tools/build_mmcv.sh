#!/usr/bin/env bash
# Build the mmcv wheel (with its C++/CUDA ops) for the torch in the given venv, once, and cache it.
#
# Why: mmcv 2.1.0 (the newest that mmdet 3.3.0 accepts) ships no wheel for torch 2.14, so it is
# compiled from the sdist. torch 2.14's headers need C++20 but mmcv's setup.py hard-codes
# -std=c++17 for both the host compiler and nvcc: we rewrite that flag in the unpacked sdist, which
# covers g++ (CPU build) and nvcc (FORCE_CUDA=1 or a visible GPU) alike.
#
# Usage: tools/build_mmcv.sh PYTHON WHEEL_DIR
#   PYTHON     interpreter of the target venv (torch already installed there)
#   WHEEL_DIR  cache folder; an existing mmcv-<version>-*.whl there is reused (seconds)
set -euo pipefail
PY=${1:?usage: build_mmcv.sh PYTHON WHEEL_DIR}
WHEEL_DIR=${2:?usage: build_mmcv.sh PYTHON WHEEL_DIR}
HERE=$(cd "$(dirname "$0")/.." && pwd)
VERSION=$(sed -n 's/^mmcv==\([0-9.]*\).*/\1/p' "$HERE/constraints.txt")
TORCH=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])')
# One wheel per (mmcv, torch) pair: the ops are compiled against torch's ABI.
TAG_DIR="$WHEEL_DIR/mmcv-$VERSION-torch$TORCH"
mkdir -p "$TAG_DIR"
if ls "$TAG_DIR"/mmcv-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "mmcv $VERSION for torch $TORCH: cached wheel in $TAG_DIR"
  exit 0
fi
echo "=================================================================================="
echo "Building mmcv $VERSION with ops from source for torch $TORCH (no wheel exists for it)."
echo "This compiles ~77 C++ files: about 17 min on 2 cores, once; the wheel is cached in"
echo "  $TAG_DIR"
echo "=================================================================================="
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" -m pip download --no-deps --no-binary :all: --no-build-isolation -d "$WORK" "mmcv==$VERSION"
tar -xzf "$WORK"/mmcv-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/mmcv-$VERSION"
grep -q -- '-std=c++17' "$SRC/setup.py" || { echo "build_mmcv: -std=c++17 not found in mmcv setup.py; check the patch" >&2; exit 1; }
sed -i 's/-std=c++17/-std=c++20/g' "$SRC/setup.py"
export MMCV_WITH_OPS=1
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
start=$(date +%s)
"$PY" -m pip wheel --no-deps --no-build-isolation -w "$WORK/dist" "$SRC"
mv "$WORK"/dist/mmcv-*.whl "$TAG_DIR/"
echo "mmcv wheel built in $(( $(date +%s) - start )) s: $(ls "$TAG_DIR")"
