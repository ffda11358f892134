"""``tpu-compat run [options] SCRIPT [ARGS...]`` / ``run -m MODULE [ARGS...]``."""

import argparse

from tpu_compat import _config, runner, tf_support


def register(subparsers):
    parser = subparsers.add_parser(
        "run", help="run a legacy TPU script unchanged on a real or emulated TPU",
        description="Run a legacy TensorFlow TPU script unchanged, as "
                    "`python SCRIPT ARGS` would, with tpu_compat installed.")
    parser.add_argument("--backend", choices=_config.BACKENDS,
                        help=f"hardware (default: ${_config.BACKEND_VAR} or auto)")
    parser.add_argument("--replicas", metavar="N",
                        help=f"emulated TPU cores (default: ${_config.REPLICAS_VAR} or 8)")
    parser.add_argument("--hosts", metavar="H",
                        help=f"emulate a TPU pod slice of H hosts, each a TensorFlow "
                             f"worker process with N/H of the cores (default: "
                             f"${_config.HOSTS_VAR} or 1; docs/pods.md)")
    parser.add_argument("--warnings", choices=_config.WARNING_POLICIES,
                        help=f"legacy-API warning policy (default: ${_config.WARNINGS_VAR} or once)")
    parser.add_argument("--strict", choices=_config.STRICT_CHOICES,
                        help=f"modern calls follow TF 2.21's TPUStrategy rules, "
                             f"errors included (default: ${_config.STRICT_VAR} or "
                             f"auto: on when --warnings=error)")
    parser.add_argument("--fidelity", choices=_config.FIDELITY_CHOICES,
                        help=f"tpu: check every replica step at trace time as "
                             f"TF 2.21's TPU compiler would (default: "
                             f"${_config.FIDELITY_VAR} or cpu)")
    parser.add_argument("--tf1", action="store_true",
                        help="`import tensorflow` yields tf.compat.v1 with v2 "
                             "behaviour disabled (TF 1.x programs)")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a module, like python -m")
    parser.add_argument("target", nargs="?", metavar="SCRIPT",
                        help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the script unchanged")
    parser.set_defaults(handler=handle)


def handle(args):
    from tpu_compat.cli import UsageError  # pylint: disable=import-outside-toplevel
    if args.module is None and args.target is None:
        raise UsageError("tpu-compat run: error: give a SCRIPT or -m MODULE")
    runner.prepare_environment(backend=args.backend, replicas=args.replicas,
                               warnings=args.warnings, strict=args.strict,
                               fidelity=args.fidelity, hosts=args.hosts)
    tf_support.require_tensorflow()
    script_args = list(args.args)
    try:
        if args.module is not None:
            if args.target is not None:
                script_args.insert(0, args.target)
            return runner.run_module(args.module, script_args, tf1=args.tf1)
        return runner.run_script(args.target, script_args, tf1=args.tf1)
    except runner.RunError as error:
        raise UsageError(f"tpu-compat run: error: {error}") from None
