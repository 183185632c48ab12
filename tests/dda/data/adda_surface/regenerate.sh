#!/usr/bin/env bash
# Regenerate adda_surface.json from an ADDA executable that YOU built (this script never downloads
# or builds ADDA). ADDA: https://github.com/adda-team/adda ; the stored data came from commit
# acbebb0 (v1.5.0-alpha3), sequential double-precision build (`cd src && make seq`, needs gcc,
# gfortran, libfftw3-dev).
#
#   ADDA=/path/to/adda bash tests/dda/data/adda_surface/regenerate.sh [case ...]
#
# With case names, only those cases are re-run and merged into the existing JSON.
# Optional: ADDA_CRIT=/path/to/adda_crit, an ADDA built after `sed -i 's/^#define CRIT 1E-4/#define
# CRIT 1E-7/' src/somnec.c`; its Qext/Qabs go to each surface case's "crit_check" (the stock
# binary's error from its Sommerfeld-integral tolerance).
set -euo pipefail
: "${ADDA:?set ADDA to the path of an adda executable}"
[ -x "$ADDA" ] || { echo "ADDA=$ADDA is not an executable" >&2; exit 1; }
if [ -n "${ADDA_CRIT:-}" ] && [ ! -x "$ADDA_CRIT" ]; then
  echo "ADDA_CRIT=$ADDA_CRIT is not an executable" >&2; exit 1
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
"$ADDA" -V | head -2
exec python3 "$(dirname "$0")/make_reference.py" "$@"
