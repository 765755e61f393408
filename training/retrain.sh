#!/usr/bin/env bash
# Retrain, export and evaluate the shipped token compressor. Usage: training/retrain.sh [DATA_DIR] [RUN_DIR]
set -euo pipefail
DATA="${1:-../shared/data}"
RUN="${2:-runs/compressor}"
odcf -v train --data "$DATA" --out "$RUN"
odcf -v export "$RUN" --out odcf/data/models/compressor
odcf eval --data "$DATA" --work "$RUN" --out benchmarks/results/compressor_eval.md --json "$RUN/eval.json"
