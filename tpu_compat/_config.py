"""The parsers of the settings table (:mod:`tpu_compat.settings`).

Each parser takes the name the value came under (an environment variable, a
``tpu-compat`` flag, a pytest option or a library argument) and the raw value,
and returns the parsed value or raises :class:`ConfigError` naming that name,
the bad value and what is allowed; so a bad value reads the same wherever it
was given. Which variable, flag and default each setting has is the table's
business, not this module's. Nothing here imports TensorFlow.
"""

import os


class ConfigError(ValueError):
    """A configuration value (variable, flag or argument) is not allowed."""


def choice(name, value, allowed):
    """``value`` lower-cased and stripped, when it is one of ``allowed``."""
    value_norm = str(value).strip().lower()
    if value_norm not in allowed:
        raise ConfigError(
            f"{name}={value!r} is not valid; allowed values: {', '.join(allowed)}")
    return value_norm


def positive_int(name, value):
    """Parses ``value`` as a positive int, naming ``name`` when it is not one."""
    if isinstance(value, bool):
        raise ConfigError(f"{name}={value!r} is not valid; expected a positive integer")
    if isinstance(value, int):
        number = value
    else:
        try:
            number = int(str(value).strip(), 10)
        except ValueError:
            raise ConfigError(
                f"{name}={value!r} is not valid; expected a positive integer") from None
    if number < 1:
        raise ConfigError(f"{name}={value!r} is not valid; expected a positive integer")
    return number


def non_negative_int(name, value):
    """Parses ``value`` as an int >= 0 (a seed), naming ``name`` when it is not one."""
    try:
        number = int(str(value).strip(), 10)
    except ValueError:
        number = -1
    if isinstance(value, bool) or number < 0:
        raise ConfigError(f"{name}={value!r} is not valid; expected a non-negative integer")
    return number


def positive_seconds(name, value):
    """Parses ``value`` as a finite positive number of seconds."""
    try:
        seconds = float(str(value).strip())
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(
            f"{name}={value!r} is not valid; expected a positive number of seconds")
    return seconds


def port_number(name, value):
    """Parses ``value`` as a TCP port, 1 to 65535."""
    port = positive_int(name, value)
    if port > 65535:
        raise ConfigError(f"{name}={value!r} is not valid; expected a port number "
                          f"from 1 to 65535")
    return port


def directory(name, value):
    """A directory: an existing one, or a path whose parent exists (made when used)."""
    text = str(value).strip()
    path = os.path.abspath(os.path.expanduser(text)) if text else ""
    usable = os.path.isdir(path) or (
        bool(path) and not os.path.exists(path) and os.path.isdir(os.path.dirname(path)))
    if not usable:
        raise ConfigError(f"{name}={value!r} is not valid; expected a directory, or a "
                          f"path whose parent directory exists")
    return path


def any_text(name, value):
    """The value as given: for variables another program reads (TensorFlow)."""
    del name
    return str(value)


def cores_per_host(hosts, replicas, hosts_name, replicas_name, replicas_defaulted=False):
    """Emulated cores on each of ``hosts`` hosts sharing ``replicas`` replicas.

    Every host of a pod slice has the same number of cores, so ``replicas``
    must be a multiple of ``hosts``; the error names both settings (the
    flags or the variables they came from).
    """
    if replicas % hosts:
        default = " (the default)" if replicas_defaulted else ""
        raise ConfigError(
            f"{replicas_name}={replicas}{default} cannot be split over "
            f"{hosts_name}={hosts} "
            f"hosts; the number of replicas must be a multiple of the number of "
            f"hosts (every host of a pod slice has the same number of cores)")
    return replicas // hosts
