"""The errors the client raises: one base class, and a subclass per thing a caller may branch on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

if TYPE_CHECKING:
    from ._endpoints import EndpointState


class SnowdriftError(Exception):
    """Base of every error the client raises. ``str(error)`` says what happened and what to do."""

    #: True when asking again cannot help until something changes (a name, a token, the code):
    #: such errors come back at once, never retried. False for outages, which the client
    #: rides out by itself once a server answers again.
    final: bool = False


class UnknownName(SnowdriftError):
    """The servers have no generator or segment tag of that name (HTTP 404). Final."""

    final = True


class Unauthorized(SnowdriftError):
    """The token is missing or unknown (HTTP 401), or may not use that name (HTTP 403). Final.

    ``status`` is the HTTP status the server answered.
    """

    final = True

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class BadRequest(SnowdriftError, ValueError):
    """The request is wrong: the server refused it as malformed (HTTP 400, or 409 for a kind
    that cannot answer it, such as ``next`` of a UUID generator), or the client's own
    arguments or settings are (a count of 0, an endpoint URL it cannot read). Final.

    It is also a :class:`ValueError`, as Python's own bad arguments are. ``status`` and
    ``code`` are the server's HTTP status and error code when it was the server's answer,
    None when the client refused the call itself.
    """

    final = True

    def __init__(self, message: str, status: Optional[int] = None, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class Unavailable(SnowdriftError):
    """No endpoint gave IDs within its tries and the cache had none to give.

    The message names the ID name, every endpoint and its last error. ``name`` is the ID
    name, ``endpoints`` each endpoint's state when the call gave up. Not final: the client
    recovers by itself once a server answers again.
    """

    def __init__(self, message: str, name: str, endpoints: Tuple[EndpointState, ...]) -> None:
        super().__init__(message)
        self.name = name
        self.endpoints = endpoints


class ClientClosed(SnowdriftError):
    """The client was closed; make a new one. Final."""

    final = True
