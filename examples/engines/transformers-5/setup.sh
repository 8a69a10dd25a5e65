#!/usr/bin/env bash
# One command, idempotent, from anywhere: transformers 5.24.0 (the newest 5.x on PyPI when this was written) on
# torch 2.13.0 (a CPU wheel, installed first so transformers keeps it) in ./env: the control's setup with 5.x's
# version. Nothing to convert: the adapter loads the Hugging Face folder as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../transformers-4.38.2/setup.sh" 5.24.0 "$here"
