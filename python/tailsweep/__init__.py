"""tailsweep's Python side.

``tailsweep.child`` helps a program that runs as a ``kind: command`` job's
child (docs/child-contract.md): parameters, metrics lines, checkpoints,
stop signals and the result file. It is standard library only and optional:
the contract is the environment variables and files, which any program can
use without this package.

This module imports nothing itself, so ``import tailsweep`` stays cheap;
import the submodule you need (``from tailsweep import child``).
"""

__version__ = "0.1.0"
__all__ = ["child"]
