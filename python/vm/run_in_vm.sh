#!/usr/bin/env bash
# Runs a Python script against the memhal module inside the DMA-heap VM (the guest has no
# Python: the interpreter, its standard library, numpy and the libraries they and the module
# load are copied in). run_in_vm.sh RUNNER PYTHON PACKAGE SCRIPT [runner options...], PACKAGE
# being the built memhal package directory (__init__.py and _memhal*.so).
# Exits 77 (skipped) where the runner is missing.
set -euo pipefail
runner=$1 python=$2 module=$3 script=$4
shift 4
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner not found" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r executable prefix stdlib numpy < <("$python" -c 'import os, sys, sysconfig, numpy
print(os.path.realpath(sys.executable), sys.prefix, sysconfig.get_paths()["stdlib"], os.path.dirname(numpy.__file__))')
mkdir "$work/lib"
{ ldd "$module"/_memhal*.so; find "$numpy" -name '*.so' -exec ldd {} \; ; } | awk '$3 ~ /^\// { print $3 }' | sort -u |
  while read -r library; do cp -L "$library" "$work/lib/"; done
exec bash "$(dirname "$0")/../../tests/support/run_in_vm.sh" "$runner" "$@" \
  --add "$stdlib:$stdlib" --add "$numpy:/dut/py/numpy" --add "$module:/dut/py/${module##*/}" \
  --add "$work/lib:/dut/lib" --add "$script:/dut/${script##*/}" \
  --env PYTHONPATH=/dut/py --env "PYTHONHOME=$prefix" --env LD_LIBRARY_PATH=/dut/lib --env PYTHONDONTWRITEBYTECODE=1 \
  -- "$executable" "/dut/${script##*/}"
