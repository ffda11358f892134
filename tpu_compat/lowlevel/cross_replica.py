"""Where the replicas meet: ``cross_replica_sum`` and the replica context.

On the emulated TPU ``cross_replica_sum`` is a ``merge_call`` where the
replicas meet: each group is summed in replica order (exact, deterministic)
and every member gets its group's sum; its gradient is the same sum of the
gradients, op by op, as XLA differentiates CrossReplicaSum: each replica's
gradient of its n-th sum meets the other replicas' gradients of their n-th
sum, in whatever order the replicas build them. ``CrossShardOptimizer``
(:mod:`.cross_shard_optimizer`) builds its sums with
:func:`emulated_cross_replica_sums`. Both need only an emulated replica context
(:func:`emulated_replica_context`), so they work the same inside
``tpu.replicate`` and inside a TPUStrategy's ``run`` / ``experimental_run``.
"""

import threading
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import distribute_lib, ops, values_lib
from tpu_compat.lowlevel import native
from tpu_compat.runtime import emulated

__all__ = ["CrossReplicaGradientOrderError", "NotInReplicaContextError",
           "check_gradients_met", "cross_replica_sum", "emulated_cross_replica_sums",
           "emulated_replica_context", "require_replica_context", "sums_built"]


class NotInReplicaContextError(ValueError):
    """A cross-replica TPU op was used outside any replicated computation."""


# -- the replica context -------------------------------------------------------

def emulated_replica_context():
    """The current replica context if it belongs to an emulated TPU, else None.

    That is the replica context of ``tpu.replicate``/``rewrite``/``shard`` on
    the emulated TPU, and of a compat.v1 or TF2 TPUStrategy adapter's
    ``run``/``experimental_run``/``call_for_each_replica`` there.
    """
    if distribute_lib.in_cross_replica_context():
        return None
    context = distribute_lib.get_replica_context()
    if context is None or not distribute_lib.has_strategy():
        return None
    if isinstance(context.strategy.extended, emulated.EmulatedTPUExtended):
        return context
    return None


def require_replica_context(api):
    """The emulated replica context ``api`` runs in, or a clear error naming ``api``."""
    context = emulated_replica_context()
    if context is None:
        raise NotInReplicaContextError(
            f"{api} must be called inside a replicated TPU computation "
            f"(tf.compat.v1.tpu.replicate, rewrite, shard or batch_parallel, or "
            f"a TPUStrategy's run/experimental_run); outside one, TF 1.15 built "
            f"a CrossReplicaSum op that failed at Session.run with 'No OpKernel "
            f"was registered to support Op CrossReplicaSum'")
    return context


def _check_group_assignment(group_assignment, num_replicas, argument="group_assignment"):
    """``group_assignment`` as a list of lists of ints, validated like TF 1.15."""
    if group_assignment is None:
        return [list(range(num_replicas))]
    if hasattr(group_assignment, "tolist"):  # a NumPy array
        group_assignment = group_assignment.tolist()
    if not (isinstance(group_assignment, (list, tuple)) and group_assignment and all(
            isinstance(group, (list, tuple)) for group in group_assignment)):
        raise ValueError(
            f"{argument} must be a list of lists of replica ids (shape "
            f"[num_groups, replicas_per_group]), got {group_assignment!r}")
    groups = [[int(i) for i in group] for group in group_assignment]
    members = sorted(i for group in groups for i in group)
    if members != list(range(num_replicas)):
        raise ValueError(
            f"{argument} must be a permutation of range({num_replicas}) (each of "
            f"the {num_replicas} replicas in exactly one group), got "
            f"{group_assignment!r}")
    if len({len(group) for group in groups}) != 1:
        raise ValueError(
            f"{argument}: every group must have the same size, got "
            f"{group_assignment!r}")
    return groups


def _group_sums(strategy, per_replica, groups):
    """Cross-replica context: each replica gets the sum of its group, in order."""
    local = strategy.experimental_local_results(per_replica)
    devices = strategy.extended.worker_devices
    if len(local) == 1 < len(devices):
        # merge_call passes one value when every replica passed the same
        # tensor (replicate's inputs may repeat one): each replica summed it.
        local = local * len(devices)
    results = [None] * len(local)
    for group in groups:
        with ops.device(devices[group[0]]):
            # Summed one by one in replica-id order: the same numbers on every
            # run and every group member, as the TPU's all-reduce gives.
            total = local[group[0]]
            for replica in group[1:]:
                total = total + local[replica]
        for replica in group:
            with ops.device(devices[replica]):
                results[replica] = tf.identity(total)
    return values_lib.PerReplica(tuple(results))


# The gradient of an all-reduce is the all-reduce of the gradient, per op, as
# XLA differentiates CrossReplicaSum (TF r1.15 tensorflow/python/tpu/ops/
# tpu_ops.py, ``_cross_replica_sum_grad``: ``return gen_tpu_ops.cross_replica_sum(
# grad, op.inputs[1])``, the same group assignment). Each replica's result is
# a custom gradient of (x, total): its value is the group's sum, but its gradient goes only
# to this replica's own ``x``, as the replica's own op on a TPU; the merged sum
# itself (an Add chain over every replica's ``x``) is never differentiated,
# which would add the paths through the other replicas' computations a second
# time. Which of its replica's sums each is (the n-th) is counted here by
# graph (weakly: a graph's id can be reused once it is collected, as each
# Estimator call builds a new one) and replica: the n-th sum of every replica
# is the same op of the TPU program, and its gradients meet by that number.
# Per graph: {replica id: how many sums that replica has built}.
_sums_per_replica = weakref.WeakKeyDictionary()
# Per graph: the gradient meetings (:class:`_GradientMeeting`) still open.
_meetings = weakref.WeakKeyDictionary()
_meetings_lock = threading.Lock()
# How many emulated cross-replica sums were ever built (TPUEstimator checks that
# a training model_fn built one: TF 1.15 required CrossShardOptimizer).
_sums_built = 0


class CrossReplicaGradientOrderError(RuntimeError):
    """The replicas did not all differentiate the same cross-replica sums."""


def sums_built():
    """How many emulated cross-replica sums this process has built so far."""
    return _sums_built


def _merged_group_sums(context, xs, groups, index=None):
    """Every replica's ``xs`` summed over its group, in one ``merge_call``.

    One meeting of the replicas for a whole list (CrossShardOptimizer's
    gradients): each merge_call hands every replica thread over in turn, and
    one per gradient (ResNet-50: 214) cost that many rounds of it.
    """
    def merge(strategy, per_replica_xs, indices):
        found = {int(i) for i in strategy.experimental_local_results(indices)}
        if len(found) > 1:
            # merge_call pairs the replicas' calls in the order each makes
            # them: summing the gradients of different sums would be wrong
            # numbers (or a shape error), so refuse with the cause. Only eager
            # gradients come here (a graph's meet by op: _GradientMeeting).
            raise CrossReplicaGradientOrderError(
                f"the replicas differentiated different cross_replica_sum ops at "
                f"the same time (each replica's sums number {sorted(found)}): "
                f"executing eagerly, the emulated TPU sums each op's gradients "
                f"across the replicas when every replica reaches that op's "
                f"gradient, so each replica's model_fn must build the same "
                f"cross_replica_sum ops in the same order")
        return [_group_sums(strategy, per_replica, groups) for per_replica in per_replica_xs]
    return context.merge_call(merge, args=(list(xs), -1 if index is None else index))


class _GradientMeeting:
    """Where the replicas' gradients of one cross-replica sum meet, in a graph.

    The replicas build their gradients one thread at a time, each in the order
    its ``tf.gradients`` / ``GradientTape`` walks its graph, and that order
    differs between replicas when their graphs differ (a replica-dependent
    model_fn; SimCLR's replicas did while each read every replica's losses
    from the graph's collection, see lowlevel/replica_collections.py). A
    replica blocked until the others reached the same sum could deadlock (A
    waits at sum 1 for B, B at sum 2 for A), so no replica waits here: each gets at once a
    stand-in for its sum (an ``IdentityN`` of its own upstream gradient) and
    carries on; when the last member of its group arrives, the group's
    upstream gradients are summed in replica order and every member's
    stand-in is rewired to read that sum. Nothing blocks, so nothing can
    deadlock; a sum some replicas never differentiate is refused by
    :func:`check_gradients_met` when the replicas have been built.
    """

    def __init__(self, name, index, groups, devices):
        self.name, self.index, self.groups, self.devices = name, index, groups, devices
        self.upstream = {}   # replica -> its upstream gradient
        self.stand_in = {}   # replica -> the IdentityN op its gradient reads
        self.met = set()     # replicas whose group has met

    def arrive(self, replica, upstream):
        # IdentityN, not Identity: tensor_util.constant_value looks through an
        # Identity, and must not fold the stand-in to this replica's upstream.
        stand_in = tf.identity_n([upstream], name="cross_replica_sum_grad")[0]
        self.upstream[replica] = upstream
        self.stand_in[replica] = stand_in.op
        group = next(g for g in self.groups if replica in g)
        if all(member in self.upstream for member in group):
            self._meet(group)
        return stand_in

    def _meet(self, group):
        # On the group's first device, as the forward sum (_group_sums), not
        # where the gradient of the last arriving replica is being colocated.
        with ops.colocate_with(None, ignore_existing=True), \
                ops.device(self.devices[group[0]]):
            total = self.upstream[group[0]]
            for member in group[1:]:
                total = total + self.upstream[member]
        for member in group:
            self.stand_in[member]._update_input(0, total)  # pylint: disable=protected-access
            self.met.add(member)

    def missing(self):
        """(replicas that differentiated this sum, replicas that did not), or None if met."""
        if len(self.met) == len(self.upstream):
            return None
        arrived = sorted(self.upstream)
        waiting_for = sorted({m for g in self.groups if set(g) & set(arrived) for m in g}
                             - set(arrived))
        return arrived, waiting_for


def _graph_gradient_of_sum(context, upstream, groups, index, name):
    """This replica's gradient of its ``index``-th sum: the group's sum of them (by op)."""
    replica = _replica_number(context)
    graph = ops.get_default_graph()
    with _meetings_lock:
        state = _meetings.setdefault(graph, {"requests": {}, "open": {}})
        # The same sum differentiated twice (two tf.gradients calls) meets twice.
        request = state["requests"].get((replica, index), 0)
        state["requests"][(replica, index)] = request + 1
        meeting = state["open"].get((index, request))
        if meeting is None:
            meeting = _GradientMeeting(name, index, groups,
                                       context.strategy.extended.worker_devices)
            state["open"][(index, request)] = meeting
        return meeting.arrive(replica, upstream)


def check_gradients_met(graph=None):
    """Raises if some replicas differentiated a cross-replica sum the others did not.

    Called when the replicas of a computation have been built: a gradient whose
    group has not met would otherwise be this replica's own gradient alone.
    """
    graph = graph or ops.get_default_graph()
    with _meetings_lock:
        state = _meetings.get(graph)
        if not state:
            return
        unmet = []
        for key, meeting in list(state["open"].items()):
            missing = meeting.missing()
            if missing is None:
                del state["open"][key]
            else:
                unmet.append((meeting, missing))
        if not unmet:
            return
        state["open"].clear()
    meeting, (arrived, waiting_for) = unmet[0]
    raise CrossReplicaGradientOrderError(
        f"the gradient of cross_replica_sum {meeting.name!r} (each replica's sum "
        f"number {meeting.index}) was built by replicas {arrived} but not by "
        f"replicas {waiting_for} of its group: on a TPU every replica runs the "
        f"same program, so each replica must differentiate the same "
        f"cross_replica_sum ops ({len(unmet)} sum(s) affected). A model_fn "
        f"whose loss reads a graph collection (tf.losses.get_total_loss()) "
        f"also differentiates the losses the other replicas added to it")


# Run by the emulated strategy once every replica of a step is built.
emulated.after_replicas_built(check_gradients_met)


def _replica_number(context):
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return -1 if replica is None else int(replica)


def _emulated_cross_replica_sum(context, x, group_assignment, name):
    return emulated_cross_replica_sums(context, [x], group_assignment, name)[0]


def emulated_cross_replica_sums(context, xs, group_assignment, name=None):
    """``cross_replica_sum`` of each tensor of ``xs``: one op each, one meeting for all.

    The numbers and the gradients are those of one ``cross_replica_sum`` per
    tensor, in list order (each is its replica's next sum, and its gradient
    meets the other replicas' gradients of that same sum); only the
    replicas' meeting in the forward pass is shared.
    """
    groups = _check_group_assignment(group_assignment, context.num_replicas_in_sync)
    counts = _sums_per_replica.setdefault(ops.get_default_graph(), {})
    replica = _replica_number(context)
    with ops.name_scope(name, "CrossReplicaSum") as outer:
        xs = [tf.convert_to_tensor(x) for x in xs]
        totals = _merged_group_sums(context, xs, groups)
        first = counts.get(replica, 0)
        counts[replica] = first + len(xs)
        # One sum is named by its scope (the name errors give); several, by
        # their place in the scope.
        names = ([outer.rstrip("/")] if len(xs) == 1
                 else [f"{outer}sum_{i}" for i in range(len(xs))])
        results = _differentiated_by_op(xs, totals, groups,
                                        range(first, first + len(xs)), names)
    global _sums_built
    _sums_built += len(results)
    return results


def _differentiated_by_op(xs, totals, groups, indices, names):
    """``totals`` (each the group's sum, this replica's copy), each with XLA's gradient to its ``x`` only.

    One ``tf.custom_gradient`` for the whole list: in graph mode each call
    lists every variable of the graph twice and registers a gradient
    function, which for ResNet-50's 214 gradients on 8 replicas was a tenth
    of the time to the first step. The gradient is still per sum: each
    upstream gradient meets the other replicas' gradients of that same sum.
    """
    count = len(xs)

    # tf.custom_gradient, so tf.gradients and a GradientTape (TF 2's
    # strategy.run) both take it: the group sum of the gradient, to x only.
    @tf.custom_gradient
    def sums_of_groups(*xs_and_totals):
        def gradient(*upstreams):
            return tuple(_gradient_of_sum(upstream, groups, index, name) for upstream, index, name
                         in zip(upstreams, indices, names)) + (None,) * count
        return [tf.identity(total) for total in xs_and_totals[count:]], gradient
    return sums_of_groups(*xs, *totals)


def _gradient_of_sum(upstream, groups, index, name):
    """This replica's gradient of its ``index``-th sum: the group's sum of the upstream gradients."""
    if upstream is None:  # this sum is not on the path being differentiated
        return None
    context = emulated_replica_context()
    if context is None:  # differentiated outside the replicas
        return upstream
    if tf.executing_eagerly() or _replica_number(context) < 0:
        return _merged_group_sums(context, [upstream], groups, index=index)[0]
    return _graph_gradient_of_sum(context, upstream, groups, index, name)


def cross_replica_sum(x, group_assignment=None, name=None):
    """``tf.compat.v1.tpu.cross_replica_sum``: sum ``x`` over each replica group.

    Args:
      x: this replica's tensor.
      group_assignment: ``[num_groups, replicas_per_group]`` replica ids; each
        replica gets the sum over its group. None: one group of all replicas.
      name: optional name.
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.cross_replica_sum(x, group_assignment, name=name)
    context = require_replica_context("tf.compat.v1.tpu.cross_replica_sum")
    return _emulated_cross_replica_sum(context, x, group_assignment, name)

