"""Whether the Cloud TPU that ``TPU_NAME`` names can be reached, within a bound.

TensorFlow's ``TPUClusterResolver`` finds the TPU that ``TPU_NAME`` names in one
of two ways (``tensorflow/python/tpu/client/client.py``, TF 1.15 to 2.21):

* ``grpc://HOST:PORT`` is the TPU's own gRPC address: connecting waits for it
  without any bound (nothing listening, or a listener that never answers,
  hangs the program);
* any other name is looked up through the GCE metadata server
  (``GCE_METADATA_HOST``, else ``GCE_METADATA_IP``, else
  ``metadata.google.internal``), with ``urllib`` and no timeout: off Google
  Cloud that ends in a ``URLError`` traceback, or hangs.

:func:`unreachable` asks the same place first, waiting at most
``TPU_COMPAT_TPU_TIMEOUT`` seconds, so that a wrong ``TPU_NAME`` is one line
naming it (``backend.py`` raises it as ``BackendUnavailableError``).
"""

import os
import socket

from tpu_compat import settings
from tpu_compat.pod import launch

__all__ = ["unreachable"]

GRPC_SCHEME = "grpc://"


def _metadata_endpoint(environ):
    """The GCE metadata server's host:port, as TensorFlow's client finds it."""
    endpoint = (environ.get("GCE_METADATA_HOST") or
                environ.get("GCE_METADATA_IP", "metadata.google.internal"))
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        return endpoint, 80
    return host, int(port)


def unreachable(environ=None):
    """Why the TPU ``TPU_NAME`` names cannot be reached, or None (reached, or unset)."""
    environ = os.environ if environ is None else environ
    name = environ.get("TPU_NAME", "").strip()
    if not name:
        return None
    timeout = settings.read("tpu_timeout", environ)
    waited = f"{settings.TPU_TIMEOUT_VAR}={timeout:g} s"
    if name.startswith(GRPC_SCHEME):
        address = name[len(GRPC_SCHEME):]
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            return (f"TPU_NAME={name!r} is not valid; expected a Cloud TPU's name, or "
                    f"grpc://HOST:PORT with a port from 1 to 65535")
        why = launch.silent(address, timeout)
        if why is None:
            return None
        if why.startswith("not reachable"):
            what = f"is {why}"
        elif why.startswith(launch.NO_ANSWER):
            what = f"does not answer: {why}"
        else:
            what = f"does not answer as a TPU's gRPC server does: {why}"
        return f"TPU_NAME={name!r} {what} (waited up to {waited})"
    host, port = _metadata_endpoint(environ)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except (OSError, ValueError) as error:
        return (f"TPU_NAME={name!r} names a Cloud TPU, which TensorFlow looks up through "
                f"the GCE metadata server ({host}:{port}), and that is not reachable "
                f"from this machine ({error}; waited up to {waited}): run on a Google "
                f"Cloud VM that can use the TPU, set TPU_NAME=grpc://HOST:8470 to the "
                f"TPU's address, or unset TPU_NAME to emulate a TPU")
