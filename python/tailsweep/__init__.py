"""tailsweep's Python side.

- ``tailsweep.Client``: sweeps' status, jobs, results and unsampled curves
  as records or pandas DataFrames (``Client(url, token=...)`` reads a
  coordinator's HTTP API, ``Client.open("tailsweep.db")`` its database
  file; docs/python.md).
- ``tailsweep.child``: helps a program that runs as a ``kind: command``
  job's child (docs/child-contract.md): parameters, metrics lines,
  checkpoints, stop signals and the result file. Optional: the contract is
  the environment variables and files.
- ``tailsweep.errors``: the exceptions, named after the server's codes.

Standard library only; pandas is imported when a DataFrame is asked for.
Names are imported on first use, so ``import tailsweep`` stays cheap.
"""

__version__ = "0.1.0"
__all__ = ["Client", "Error", "NotFound", "InvalidArgument",
           "FailedPrecondition", "Unauthenticated", "PermissionDenied",
           "Unavailable", "ResourceExhausted", "ReadOnly",
           "NotAvailableOffline", "child",
           "errors"]


def __getattr__(name):
    import importlib
    if name in ("child", "errors", "client"):
        return importlib.import_module("tailsweep." + name)
    if name == "Client":
        return importlib.import_module("tailsweep.client").Client
    if name in __all__:
        return getattr(importlib.import_module("tailsweep.errors"), name)
    raise AttributeError("module 'tailsweep' has no attribute '%s'" % name)
