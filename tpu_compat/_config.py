"""Configuration read from the environment, validated in one place.

Every value a user can set (environment variable or the matching
``tpu-compat run`` flag) is parsed here, so that a bad value always produces
the same message: the variable's name, the bad value and what is allowed.
Nothing here imports TensorFlow.
"""

import os

BACKEND_VAR = "TPU_COMPAT_BACKEND"
REPLICAS_VAR = "TPU_COMPAT_NUM_REPLICAS"
WARNINGS_VAR = "TPU_COMPAT_WARNINGS"
# TF 2.21's TPUStrategy rules for modern calls (docs/emulated_tpu.md#strict-mode).
STRICT_VAR = "TPU_COMPAT_STRICT"
# How faithfully the emulated TPU models a TPU's compiler (docs/emulated_tpu.md#fidelity).
FIDELITY_VAR = "TPU_COMPAT_FIDELITY"
# Emulated TPU pod slices (docs/pods.md): hosts, each a TF worker process.
HOSTS_VAR = "TPU_COMPAT_NUM_HOSTS"
# Seconds a pod worker may take to come up (and, with TF_CONFIG, to answer).
POD_TIMEOUT_VAR = "TPU_COMPAT_POD_TIMEOUT"
# First loopback port of the workers `--hosts` starts (default: free ports).
POD_PORT_VAR = "TPU_COMPAT_POD_PORT"
DEFAULT_POD_TIMEOUT = 60.0
# Set by `tpu-compat regress` / `verify`: seed the RNGs before the script runs.
SEED_VAR = "TPU_COMPAT_SEED"

BACKENDS = ("auto", "tpu", "gpu", "cpu")
WARNING_POLICIES = ("once", "always", "error", "ignore")
# auto: strict exactly when legacy-API warnings are errors.
STRICT_CHOICES = ("auto", "on", "off")
# tpu: replica steps are checked at trace time as TF 2.21's TPU compiler would;
# cpu: whatever the emulated cores (CPU devices) can run, runs.
FIDELITY_CHOICES = ("cpu", "tpu")
DEFAULT_EMULATED_REPLICAS = 8  # a v2-8 / v3-8 slice has 8 cores


class ConfigError(ValueError):
    """A configuration value (variable, flag or argument) is not allowed."""


def _choice(name, value, allowed):
    value_norm = value.strip().lower()
    if value_norm not in allowed:
        raise ConfigError(
            f"{name}={value!r} is not valid; allowed values: {', '.join(allowed)}")
    return value_norm


def backend_choice(environ=None):
    """The requested backend: one of BACKENDS (default ``auto``)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(BACKEND_VAR, "")
    return _choice(BACKEND_VAR, raw, BACKENDS) if raw.strip() else "auto"


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


def num_replicas(environ=None):
    """The requested replica count, or None when the backend should decide."""
    environ = os.environ if environ is None else environ
    raw = environ.get(REPLICAS_VAR, "")
    return positive_int(REPLICAS_VAR, raw) if raw.strip() else None


def num_hosts(environ=None):
    """The requested number of pod hosts, or None (one host)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(HOSTS_VAR, "")
    return positive_int(HOSTS_VAR, raw) if raw.strip() else None


def pod_timeout(environ=None):
    """Seconds a pod worker may take to start (default 60)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(POD_TIMEOUT_VAR, "")
    if not raw.strip():
        return DEFAULT_POD_TIMEOUT
    try:
        value = float(raw.strip())
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ConfigError(
            f"{POD_TIMEOUT_VAR}={raw!r} is not valid; expected a positive number "
            f"of seconds")
    return value


def pod_port(environ=None):
    """The first port of the pod's loopback workers, or None (free ports)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(POD_PORT_VAR, "")
    if not raw.strip():
        return None
    port = positive_int(POD_PORT_VAR, raw)
    if port > 65535:
        raise ConfigError(f"{POD_PORT_VAR}={raw!r} is not valid; expected a port "
                          f"number from 1 to 65535")
    return port


def cores_per_host(hosts, replicas, hosts_name=HOSTS_VAR, replicas_name=REPLICAS_VAR,
                   replicas_defaulted=False):
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


def warning_policy(environ=None):
    """The requested deprecation policy, or None when the user did not choose."""
    environ = os.environ if environ is None else environ
    raw = environ.get(WARNINGS_VAR, "")
    return _choice(WARNINGS_VAR, raw, WARNING_POLICIES) if raw.strip() else None


def strict_choice(environ=None):
    """The requested strict mode: one of STRICT_CHOICES (default ``auto``)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(STRICT_VAR, "")
    return _choice(STRICT_VAR, raw, STRICT_CHOICES) if raw.strip() else "auto"


def fidelity_choice(environ=None):
    """The requested fidelity: one of FIDELITY_CHOICES (default ``cpu``)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(FIDELITY_VAR, "")
    return _choice(FIDELITY_VAR, raw, FIDELITY_CHOICES) if raw.strip() else "cpu"


def seed(environ=None):
    """The seed for Python, NumPy and TensorFlow RNGs, or None to leave them alone."""
    environ = os.environ if environ is None else environ
    raw = environ.get(SEED_VAR, "")
    if not raw.strip():
        return None
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(
            f"{SEED_VAR}={raw!r} is not valid; expected a non-negative integer")
    return value
