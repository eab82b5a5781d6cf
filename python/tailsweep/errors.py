"""The exceptions of the tailsweep client, named after the server's codes.

``str(e)`` is the server's (or the database's) message word for word;
``e.code`` is the code's name (``"NOT_FOUND"``, ...). Catch ``Error`` for
any of them.
"""

from typing import Optional


class Error(Exception):
    """A request tailsweep refused or could not answer."""

    code = "UNKNOWN"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class NotFound(Error):
    """An unknown sweep, job or file."""

    code = "NOT_FOUND"


class InvalidArgument(Error):
    """Bad input: what was wrong, where, what is allowed."""

    code = "INVALID_ARGUMENT"


class FailedPrecondition(Error):
    """The request does not fit the state it met (e.g. an ambiguous id)."""

    code = "FAILED_PRECONDITION"


class Unauthenticated(Error):
    """A missing or wrong token."""

    code = "UNAUTHENTICATED"


class PermissionDenied(Error):
    """A token or worker not allowed this call."""

    code = "PERMISSION_DENIED"


class Unavailable(Error):
    """The coordinator or the database could not be reached or read."""

    code = "UNAVAILABLE"


class ResourceExhausted(Error):
    """Over a limit: too many whole-sweep reads at once (retry after a
    second, or read in pages), a request too large."""

    code = "RESOURCE_EXHAUSTED"


class DataLoss(Error):
    """Bytes that do not match their SHA-256 or their length: a download
    damaged or cut on the way (it was not kept; fetch it again), or a file
    damaged on the coordinator."""

    code = "DATA_LOSS"


class ReadOnly(Error):
    """A write through an offline client (a database file)."""

    code = "FAILED_PRECONDITION"


class NotAvailableOffline(Error):
    """What only a running coordinator answers."""

    code = "UNIMPLEMENTED"
