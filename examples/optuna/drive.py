#!/usr/bin/env python3
"""The Optuna example's driver is now part of the package:
`python3 -m tailsweep.optimize SPEC` (python/tailsweep/optimize.py, and
docs/python.md, "Optimize with Optuna"). The search space is the spec's
`parameters:` (study.yaml beside this file), no longer Python code.

This file runs it from a checkout, with the same options:

    TAILSWEEP_URL=http://head:8080 TAILSWEEP_TOKEN_FILE=~/.tailsweep/token \\
      python3 examples/optuna/drive.py examples/optuna/study.yaml --trials 20
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from tailsweep import optimize  # noqa: E402

if __name__ == "__main__":
    sys.exit(optimize.main())
