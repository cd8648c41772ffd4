#!/usr/bin/env bash
# The GPU check in one command, on a machine with a GPU, Python 3.12, torch and JAX, and no
# network. `make gpu-check-files` writes, on a machine with network, what it needs: the wheels
# in .whl/ (keras and its pure-Python needs, OpenNMT-py 3.5.1 and its needs) and Multi30k's
# pieces in .cache/gpu/. This installs the wheels into a folder of its own, puts keras-luong
# from this tree on the path, and runs benchmarks/gpu.py with the arguments given (see its
# --help). OpenNMT-py's transforms that need spaCy or fastText, which the recipe does not use,
# are left out rather than installed.
set -euo pipefail
cd "$(dirname "$0")/.."
site=${GPU_CHECK_SITE:-/tmp/keras-luong-gpu-check}
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" .whl/*.whl
    rm -f "$site"/onmt/transforms/terminology.py "$site"/onmt/transforms/clean.py
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1
export KERAS_HOME=${KERAS_HOME:-$PWD/.cache/keras}
exec python3 -m benchmarks.gpu "$@"
