"""A variable's ``.op.name`` inside an emulated replica is the variable's own name.

On a TPU the replicated computation was built once: TF 1.15's
``tpu.replicate`` called ``computation`` a single time inside one
``TPUReplicateContext`` (TF r1.15 tensorflow/python/tpu/tpu.py,
``split_compile_and_replicate``: ``outputs = computation(*computation_inputs)``
under the ``custom_getter`` that only drops partitioners), and the variables
the model_fn made there were ordinary resource variables, so ``param.op.name``
was the variable's name (``base_model/conv2d/kernel``). Where TF 1.15 itself
had one logical variable with several copies, ``DistributedVariable.op`` named
it by its primary copy (TF r1.15 tensorflow/python/distribute/values.py,
``DistributedVariable.op``: ``DistributedVarOp(self.primary.op.name, ...)``).

The emulated TPU builds every replica, one after another, and replica ``k``'s
copy of a ``MirroredVariable`` is a variable of its own whose op is named
``base_model/conv2d/kernel/replica_k``. Optimizers of the era name their slots
from it: SimCLR's and most TF 1 LARS/LAMB optimizers do
``tf.get_variable(param.op.name + "/Momentum", ...)``; replica 0 created
``base_model/conv2d/kernel/Momentum``, the other replicas reuse replica 0's
variable scope, and their lookup of ``.../replica_k/Momentum`` failed
("Variable ... does not exist"). Here, inside an emulated replica, the op of
a distributed variable's copy answers ``name`` with its primary's name, so each
replica finds the slot replica 0 made (and so gets its own copy of it, as each
TPU core had). Everything else about the op is the copy's own (its inputs,
device, graph, and ``tf.control_dependencies([param.op])``). Outside an
emulated replica nothing changes.
"""

from tpu_compat._tf_internals import values_lib

__all__ = ["ReplicaCopyOp", "patch_variable_op"]


class ReplicaCopyOp:
    """The op of a replica's copy of a variable, named as the variable (its primary).

    An Operation look-alike, as TF's own ``DistributedVarOp`` is: ``name`` is
    the primary's, every other attribute is the copy's op's, and TensorFlow's
    graph functions take it as that op (``_as_graph_element``).
    """

    __slots__ = ("_op", "_name")

    def __init__(self, op, name):
        self._op = op
        self._name = name

    @property
    def name(self):
        return self._name

    def _as_graph_element(self):
        return self._op

    def __getattr__(self, attribute):
        return getattr(self._op, attribute)

    def __eq__(self, other):
        if isinstance(other, ReplicaCopyOp):
            other = other._op  # pylint: disable=protected-access
        return self._op == other

    def __hash__(self):
        return hash(self._op)

    def __repr__(self):
        return f"<ReplicaCopyOp {self._name!r} of {self._op.name!r}>"


def _in_emulated_replica():
    from tpu_compat.lowlevel import cross_replica  # pylint: disable=import-outside-toplevel
    return cross_replica.emulated_replica_context() is not None


def _named_as_primary(original):
    def op(self):
        copy_op = original.fget(self)
        primary = getattr(self, "_primary", None)
        if primary is None or copy_op is primary.op or isinstance(copy_op, ReplicaCopyOp):
            return copy_op
        name = primary.op.name
        if copy_op.name == name or not _in_emulated_replica():
            return copy_op
        return ReplicaCopyOp(copy_op, name)
    return property(op, doc=original.__doc__)


def patch_variable_op(changes):
    """DistributedVariable.op names replica copies as the primary (undone by uninstall)."""
    owner = values_lib.DistributedVariable
    changes.replace(owner, "op", _named_as_primary(vars(owner)["op"]))
