"""The parsers of the settings table (:mod:`tpu_compat.settings`).

Each parser takes the name the value came under (an environment variable, a
``tpu-compat`` flag, a pytest option or a library argument) and the raw value,
and returns the parsed value or raises :class:`ConfigError` naming that name,
the bad value and what is allowed; so a bad value reads the same wherever it
was given. Which variable, flag and default each setting has is the table's
business, not this module's. Nothing here imports TensorFlow.
"""

import math
import os
import re


class ConfigError(ValueError):
    """A configuration value (variable, flag or argument) is not allowed."""


def choice(name, value, allowed):
    """``value`` lower-cased and stripped, when it is one of ``allowed``."""
    value_norm = str(value).strip().lower()
    if value_norm not in allowed:
        raise ConfigError(
            f"{name}={value!r} is not valid; allowed values: {', '.join(allowed)}")
    return value_norm


# Bounds, each checked where the value is parsed (so a bad one is one line
# naming it, not an OverflowError or a hang much later).
# Emulated cores (logical CPU devices): a TPUStrategy's cost grows linearly
# with them. Measured on a 2-core machine (docs/emulated_tpu.md): 1024 replicas
# take 6.7 s to build the strategy, 7.2 s for its first step and 0.87 GB, so
# 100,000 would, by extrapolation, take over 20 minutes and about 20 GB before
# the program's first step. 4096 is twice the largest TPU slice of the TF 1.x-2.3 era (a v3-2048
# pod: 1024 chips of 2 cores each), so no legacy program asks for more.
MAX_REPLICAS = 4096
# Seeds: numpy's legacy seeding (np.random.seed) and PYTHONHASHSEED both take
# 0 to 2**32 - 1, and regress and verify hand the seed to both.
MAX_SEED = 2**32 - 1
# Timeouts: one day. Python's waits overflow long before 1e308 seconds, and a
# timeout of days is one that never fires.
MAX_SECONDS = 86400.0
# Replica steps: a billion. A legacy program counts its steps in int64, but a
# step past this is one no run reaches (at a step a millisecond, 11 days).
MAX_STEP = 10**9

# Numbers are ASCII: int() and float() also take other scripts' digits
# ('\u0663', fullwidth '\uff18') and underscores, which no shell user means.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def ascii_int(value):
    """``value`` (text, blanks around it allowed) as an int of ASCII digits, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not _INTEGER.fullmatch(text):
        return None
    try:
        return int(text, 10)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None


def ascii_number(value):
    """``value`` as a finite float written in ASCII decimal notation, else None.

    ``inf``, ``nan``, hexadecimal and non-ASCII digits are refused, and so is
    a number too large for a float (``1e999``).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            return None
    else:
        text = str(value).strip()
        if not _DECIMAL.fullmatch(text):
            return None
        number = float(text)
    return number if math.isfinite(number) else None


def integer_in(name, value, low, high, expected=None):
    """``value`` as an int from ``low`` to ``high``; else ConfigError naming ``name``.

    ``expected`` words the allowed values (default: "an integer from LOW to HIGH").
    """
    number = ascii_int(value)
    if number is None or not low <= number <= high:
        raise ConfigError(f"{name}={value!r} is not valid; expected "
                          f"{expected or f'an integer from {low} to {high}'}")
    return number


def positive_int(name, value):
    """Parses ``value`` as a positive int, naming ``name`` when it is not one."""
    number = ascii_int(value)
    if number is None or number < 1:
        raise ConfigError(f"{name}={value!r} is not valid; expected a positive integer")
    return number


def non_negative_int(name, value):
    """Parses ``value`` as an int >= 0 (an index), naming ``name`` when it is not one."""
    number = ascii_int(value)
    if number is None or number < 0:
        raise ConfigError(f"{name}={value!r} is not valid; expected a non-negative integer")
    return number


def replica_count(name, value):
    """A number of emulated TPU cores: 1 to :data:`MAX_REPLICAS`."""
    return integer_in(name, value, 1, MAX_REPLICAS)


def seed(name, value):
    """A seed for Python, NumPy and TensorFlow: 0 to :data:`MAX_SEED`."""
    return integer_in(name, value, 0, MAX_SEED)


def positive_seconds(name, value):
    """Parses ``value`` as a number of seconds, above 0 and at most a day."""
    seconds = ascii_number(value)
    if seconds is None or not 0 < seconds <= MAX_SECONDS:
        raise ConfigError(
            f"{name}={value!r} is not valid; expected a positive number of seconds, "
            f"at most {MAX_SECONDS:g}")
    return seconds


def non_negative_number(name, value):
    """Parses ``value`` as a finite number >= 0 (a tolerance)."""
    number = ascii_number(value)
    if number is None or number < 0:
        raise ConfigError(f"{name}={value!r} is not valid; expected a non-negative number")
    return number


def port_number(name, value):
    """Parses ``value`` as a TCP port, 1 to 65535."""
    return integer_in(name, value, 1, 65535, "a port number from 1 to 65535")


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


def step_and_file(name, value):
    """``STEP:FILE``: a positive step number and a file whose directory exists."""
    step_text, colon, path = str(value).strip().partition(":")
    step = ascii_int(step_text)
    path = os.path.abspath(os.path.expanduser(path)) if path.strip() else ""
    if not colon or step is None or not 1 <= step <= MAX_STEP or not path \
            or os.path.isdir(path) or not os.path.isdir(os.path.dirname(path)):
        raise ConfigError(f"{name}={value!r} is not valid; expected STEP:FILE, STEP an "
                          f"integer from 1 to {MAX_STEP} and FILE a file path whose "
                          f"directory exists")
    return step, path


_SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True,
                 "0": False, "false": False, "no": False, "off": False}


def switch(name, value):
    """On or off: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``."""
    word = str(value).strip().lower()
    if word not in _SWITCH_WORDS:
        raise ConfigError(f"{name}={value!r} is not valid; allowed values: "
                          f"{', '.join(_SWITCH_WORDS)}")
    return _SWITCH_WORDS[word]


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
