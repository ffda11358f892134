"""``tpu-compat doctor``: what tpu_compat would do here, and what is wrong."""

import importlib.metadata
import os
import sys

from tpu_compat import _config, runner, settings, tf_support
from tpu_compat.pod import config as pod_config

# Shown besides the TensorFlow distributions (tf_support.TF_DISTRIBUTIONS).
DISTRIBUTIONS = ("tf-keras", "keras", "cloud-tpu-client", "libcst")


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def legacy_keras_requested(value):
    """Whether TensorFlow reads ``TF_USE_LEGACY_KERAS=value`` as "use tf-keras".

    TensorFlow's own test (tensorflow/__init__.py): exactly these strings, so
    ``TRUE`` or ``yes`` mean Keras 3.
    """
    return value in ("true", "True", "1")


def _tensorflow_keras_choice():
    """True/False: tf-keras/Keras 3 chosen by an imported TensorFlow; None if
    TensorFlow is not imported (or does not record it)."""
    module = sys.modules.get("tensorflow")
    choice = getattr(module, "_tf_uses_legacy_keras", None)
    return None if choice is None else bool(choice)


def keras_flavour(environ=None):
    """``(flavour, explanation)`` of what ``tf.keras`` is or will be."""
    environ = os.environ if environ is None else environ
    variable = runner.LEGACY_KERAS_VAR
    imported_choice = _tensorflow_keras_choice()
    if imported_choice is not None:
        return ("tf-keras (Keras 2)" if imported_choice else "Keras 3",
                "TensorFlow is already imported in this process, which fixed "
                "tf.keras for it")
    legacy = environ.get(variable)
    if legacy is None:
        if runner.tf_keras_installed():
            return ("Keras 3 (tpu-compat run switches to tf-keras)",
                    f"{variable} is unset; `tpu-compat run` sets it "
                    f"to 1 so tf.keras is tf-keras (Keras 2)")
        return ("Keras 3", "tf-keras is not installed: legacy Keras code may fail")
    if legacy_keras_requested(legacy):
        if runner.tf_keras_installed():
            return ("tf-keras (Keras 2)", f"{variable}={legacy}")
        return ("none", f"{variable}={legacy} but tf-keras is not installed")
    note = ("" if legacy.strip() in ("", "0", "false", "False") else
            "; TensorFlow reads only true, True or 1 as yes")
    return ("Keras 3", f"{variable}={legacy} (user's choice{note})")


def _keras_problems(environ):
    variable = runner.LEGACY_KERAS_VAR
    legacy = environ.get(variable)
    imported_choice = _tensorflow_keras_choice()
    if imported_choice is not None:
        if legacy is None and not imported_choice and runner.tf_keras_installed():
            return [f"TensorFlow is already imported in this process with Keras 3 "
                    f"as tf.keras, and the Keras choice can no longer change; set "
                    f"{variable}=1 before importing TensorFlow"]
        if legacy is not None and legacy_keras_requested(legacy) != imported_choice:
            return [f"{variable}={legacy} was set after TensorFlow was imported, "
                    f"so it has no effect in this process; set it before "
                    f"importing TensorFlow"]
        return []
    if legacy is not None and legacy_keras_requested(legacy) and (
            not runner.tf_keras_installed()):
        return [f"{variable}={legacy} but tf-keras is not installed, so tf.keras "
                f"will not load: {tf_support.tf_keras_install_command()}"]
    return []


def diagnose(environ=None):
    """``(facts, problems)``: facts as (name, value) pairs, problems as lines."""
    environ = os.environ if environ is None else environ
    facts, problems = [], []
    tensorflows = tf_support.installed_tf_distributions()
    importable = tf_support.tensorflow_importable()
    facts.append(("TensorFlow", ", ".join(f"{name} {version}" for name, version
                                          in sorted(tensorflows.items()))
                  or ("importable, but from no pip distribution (a local build?)"
                      if importable else "not installed")))
    low, high = tf_support.PROVEN_TF_RANGE
    facts.append(("tested with", f"TensorFlow {low} to {high} (docs/tf_versions.md)"))
    for distribution in DISTRIBUTIONS:
        facts.append((distribution, _version(distribution) or "not installed"))
    if not importable:
        # Everything below needs TensorFlow; one line says what to do.
        problems.append(tf_support.MISSING_TENSORFLOW)
        return facts, problems
    problems.extend(tf_support.mix_problems())
    for name, version in sorted(tensorflows.items()):
        if not tf_support.is_proven(version):
            problems.append(f"{name} {version} is outside the tested range "
                            f"{low} to {high}; it may work, or fail in untested ways")
    flavour, why = keras_flavour(environ)
    facts.append(("tf.keras", f"{flavour}: {why}"))
    problems.extend(_keras_problems(environ))
    try:
        facts.extend(settings_facts(environ))
    except _config.ConfigError as error:
        problems.append(str(error))
        return facts, problems
    try:
        from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
        backend_lib.start_pod()  # shows that the pod's workers come up
        chosen = backend_lib.get_backend()
        facts.append(("backend", f"{chosen.kind}: {chosen.reason}"))
        facts.append(("replicas", chosen.num_replicas))
        facts.append(("hosts", f"{chosen.num_hosts} ({chosen.num_replicas // chosen.num_hosts} "
                               f"replicas per host)"))
    except Exception as error:  # pylint: disable=broad-except
        problems.append(f"backend: {error}")
    return facts, problems


def setting_fact(setting, environ):
    """What doctor says about one row of the settings table, validating it.

    The value the variable gives, or, unset, the defaults of each entry
    point that differ (``tpu-compat run`` and the library differ on some).
    """
    if setting.given_in(environ):
        return f"{setting.show(setting.read(environ))} (set)"
    return f"unset: {setting.defaults_sentence(quote='')}"


def settings_facts(environ):
    """One fact per row of the settings table, in its order (the pod's
    rows described with the pod they ask for); raises ``ConfigError`` naming
    the first bad variable."""
    pod_facts = dict(pod_settings(environ))
    return [(setting.variable, pod_facts.get(setting.variable)
             or setting_fact(setting, environ)) for setting in settings.ROWS]


def pod_settings(environ):
    """Facts about the emulated pod settings (docs/pods.md); validates them.

    Raises ``ConfigError`` naming the variable that is wrong. Starting the
    pod (``backend.start_pod``, before the backend line) is what checks that
    its workers come up.
    """
    problem = pod_config.tf_config_problem(environ)
    if problem is not None:
        raise _config.ConfigError(problem)
    request = runner.check_pod_settings(environ)
    if request is not None and request[1] is not None:
        hosts = (f"{request[0]}: TF_CONFIG names this process the chief of the "
                 f"workers {', '.join(request[1])}")
    elif request is not None:
        hosts = (f"{request[0]}: worker processes started on loopback "
                 f"(`tpu-compat run --hosts`)")
    else:
        hosts = "1 (no pod)"
    port = settings.read("pod_port", environ)
    return [(settings.HOSTS_VAR, hosts),
            (settings.POD_TIMEOUT_VAR, f"{settings.read('pod_timeout', environ):g} s"),
            (settings.POD_PORT_VAR, port if port is not None else "free loopback ports")]


def register(subparsers):
    parser = subparsers.add_parser(
        "doctor", help="versions, the backend that would be chosen, and problems")
    parser.set_defaults(handler=handle)


def handle(args):
    del args
    facts, problems = diagnose()
    width = max(len(name) for name, _ in facts)
    for name, value in facts:
        print(f"{name:<{width}}  {value}")
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0
