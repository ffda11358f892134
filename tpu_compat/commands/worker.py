"""``tpu-compat worker``: serve one host of an emulated TPU pod on this machine.

For pods across real machines (docs/pods.md): each machine runs a worker
(``TF_CONFIG`` with task type ``worker``, or ``--cluster``/``--task``), then
the program runs once, as the chief (``TF_CONFIG`` task type ``chief``, under
``tpu-compat run``). The worker is :mod:`tpu_compat.pod.worker`, the
same one ``tpu-compat run --hosts H`` starts on loopback.
"""

from tpu_compat import tf_support
from tpu_compat.pod import worker as pod_worker


def register(subparsers):
    # The worker's own parser is the parent: one definition of its arguments.
    subparsers.add_parser(
        "worker", parents=[pod_worker.parser(add_help=False)],
        help="serve one host of an emulated TPU pod (TensorFlow's gRPC worker) "
             "for a chief on another machine",
        description="Serve one host of an emulated TPU pod: TensorFlow's gRPC "
                    "worker service with --cores emulated TPU cores. The "
                    "program runs as the chief elsewhere (docs/pods.md).",
    ).set_defaults(handler=handle)


def handle(args):
    tf_support.require_tensorflow()
    return pod_worker.serve(args)
