"""A client for snowdrift ID servers.

IDs come from a per-name cache of ranges (``form=runs``), refilled in the background before
it runs dry, from servers taken in turn with failover; standard library only.

>>> import snowdrift_client
>>> with snowdrift_client.Client(endpoints=["http://127.0.0.1:8080"]) as client:
...     order_id = client.next("order")
"""

from ._async import AsyncClient
from ._cache import Stats
from ._client import Client
from ._endpoints import EndpointState
from ._errors import (
    BadRequest,
    ClientClosed,
    SnowdriftError,
    Unauthorized,
    Unavailable,
    UnknownName,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "BadRequest",
    "Client",
    "ClientClosed",
    "EndpointState",
    "SnowdriftError",
    "Stats",
    "Unauthorized",
    "Unavailable",
    "UnknownName",
    "__version__",
]
