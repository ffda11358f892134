#!/usr/bin/env bash
# The slow, broad tests CI leaves out for its 20-minute budget (`-m slow`: the
# other replica counts of whole programs, 2-host parity, the seed examples,
# the era programs on 3.11, the install-plan check; each test declares itself
# slow where it is written, tests/conftest.py says how). Run before a release, beside scripts/tf_version_matrix.py:
#     scripts/slow_tests.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
TF_CPP_MIN_LOG_LEVEL=2 exec python -m pytest -n 2 -m slow "$@"
