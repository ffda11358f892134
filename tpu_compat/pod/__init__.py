"""Emulated TPU pod slices: H hosts, each its own TensorFlow worker process.

A pod slice (v3-32 = 4 hosts x 8 cores) is H TensorFlow workers and one
coordinator: the program runs once, as the coordinator (here: the *chief*,
the user's unchanged program), and places each replica's ops and each host's
input pipeline on that host's devices through TensorFlow's distributed
runtime (gRPC worker services; eager remote execution in TF 2.x, a
``grpc://`` session master in TF 1.x). docs/pods.md describes the semantics
and the faults. One module per job, each importing only those above it:

* :mod:`.config`  what the settings ask for: the one ``TF_CONFIG`` reader
  (chief, worker, Estimator), the host count; no TensorFlow, no processes.
* :mod:`.errors`  :class:`~.errors.PodError` and the one line printed about it.
* :mod:`.logs`    where the workers' logs go, and the chief's C++ log after a fault.
* :mod:`.worker`  one host (``tpu-compat worker``, ``python -m tpu_compat.pod.worker``).
* :mod:`.launch`  starting and stopping the worker processes this chief owns.
* :mod:`.faults`  the monitor and the heartbeats: a lost or stopped worker, a
  stuck Ctrl-C or SIGTERM ends the program and its workers.
* :mod:`.session` the explicit start: launch (or find) the workers, connect
  the chief to them, start the monitor; :func:`~.session.current_pod`.

Importing this package imports none of them: the worker starts, and the
command line answers, without loading what it does not use.
"""
