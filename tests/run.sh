#!/usr/bin/env bash
# The whole test run on a fresh Debian 12 machine (README "Run the tests"; .ci/run calls it).
# Idempotent: installs only what is missing; on a kernel without user_events it builds the
# guest kernel once (tests/vm/run.sh --setup, cached in /var/cache/ehtool-guest); then runs
# the full suite, kernel end-to-end tests included (in the guest when not native).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v perf >/dev/null || need+=(linux-perf)
command -v man >/dev/null || need+=(man-db)
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
command -v jq >/dev/null || need+=(jq)      # README examples (tests/test_readme.py)
[ -e /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

# perf needs tracefs for tracepoints on the host
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
if [ ! -e /sys/kernel/tracing/user_events_data ]; then
  tests/vm/run.sh --setup   # qemu + the user_events guest kernel for tests/test_e2e_vm.py
fi

python3 -m pip install -q -e '.[test]'   # also builds the C hot loops (ehtool/_speedups.c)
export EHTOOL_REQUIRE_SPEEDUPS=1           # so the C code is tested, never skipped
export EHTOOL_REQUIRE_EXTRAS=1             # and the analysis tests (the test extra has them)
# golden comparisons: required when ../shared/golden is there (always in CI), else skipped
if [ -d ../shared/golden ]; then export EHTOOL_REQUIRE_GOLDEN=${EHTOOL_REQUIRE_GOLDEN:-1}; fi
python3 -m ruff check ehtool tests bench scripts
lint-imports   # the layer and no-cycle contracts in pyproject.toml ([tool.importlinter])
python3 -m pytest -q -rs "$@"
