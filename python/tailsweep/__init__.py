"""tailsweep's Python side.

- ``tailsweep.Client``: sweeps' status, jobs, results and unsampled curves
  as records or pandas DataFrames (``Client(url, token=...)`` reads a
  coordinator's HTTP API, ``Client.open("tailsweep.db")`` its database
  file; docs/python.md); online, what a job's runs made: ``Job.logs()``,
  ``Job.download_checkpoint(dir)``, ``Job.download_artifacts(dir)``.
- ``tailsweep.child``: helps a program that runs as a ``kind: command``
  job's child (docs/child-contract.md): parameters, metrics lines,
  checkpoints, stop signals and the result file. Optional: the contract is
  the environment variables and files.
- ``tailsweep.errors``: the exceptions, named after the server's codes.
- ``tailsweep.optimize``: ``python3 -m tailsweep.optimize SPEC`` runs an
  Optuna study (the spec's ``method: tpe`` and ``parameters:``) whose
  trials are the sweep's jobs. Optuna is imported only when it runs.

Standard library only; pandas is imported when a DataFrame is asked for.
Names are imported on first use, so ``import tailsweep`` stays cheap.
"""

# typing.TYPE_CHECKING without importing typing (a tenth of the import's
# time); type checkers take any TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ gives, for type checkers only
    from tailsweep import child as child
    from tailsweep import errors as errors
    from tailsweep import optimize as optimize
    from tailsweep.client import Client as Client
    from tailsweep.errors import (DataLoss as DataLoss, Error as Error,
                                  FailedPrecondition as FailedPrecondition,
                                  InvalidArgument as InvalidArgument,
                                  NotAvailableOffline as NotAvailableOffline,
                                  NotFound as NotFound,
                                  PermissionDenied as PermissionDenied,
                                  ReadOnly as ReadOnly,
                                  ResourceExhausted as ResourceExhausted,
                                  Unauthenticated as Unauthenticated,
                                  Unavailable as Unavailable)

__version__ = "0.2.0"
__all__ = ["Client", "Error", "NotFound", "InvalidArgument",
           "FailedPrecondition", "Unauthenticated", "PermissionDenied",
           "Unavailable", "ResourceExhausted", "DataLoss", "ReadOnly",
           "NotAvailableOffline", "child",
           "errors"]


def __getattr__(name: str) -> object:
    import importlib
    if name in ("child", "errors", "client", "optimize"):
        return importlib.import_module("tailsweep." + name)
    if name == "Client":
        return importlib.import_module("tailsweep.client").Client
    if name in __all__:
        return getattr(importlib.import_module("tailsweep.errors"), name)
    raise AttributeError("module 'tailsweep' has no attribute '%s'" % name)
