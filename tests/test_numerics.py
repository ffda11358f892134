"""--numerics tpu, op by op, against an independent reference (numpy + ml_dtypes).

Each op of fidelity/numerics.py's table runs in a replica step of the 8-core
emulated TPU with its operands drawn at random, with round-to-nearest-even
ties, subnormals and large values mixed in. The reference rounds the operands
with ml_dtypes.bfloat16 and multiplies in float64: each result must equal it
up to float32 accumulation (1e-6 of the sum of the absolute products), and
differ from the exact float32 result by far more. The table itself is checked
against TF 2.21's own tf2xla lowering.
"""

import importlib
import inspect
import re

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from numpy.lib.stride_tricks import sliding_window_view
from tensorflow.python.ops import gen_linalg_ops, gen_math_ops, gen_nn_ops

import tpu_compat
from tpu_compat import settings
from tpu_compat.distribute import TPUStrategy
from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
from tpu_compat.patching.changes import Changes
from tpu_compat.patching import registry
from tpu_compat.fidelity import numerics

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

# Accumulation in float32 (any order) vs float64: a bound relative to the sum
# of the absolute products. bfloat16 rounding moves results ~1e-3 of it.
ACCUMULATION_RTOL = 1e-6
ROUNDING_VISIBLE = 1e-4


@pytest.fixture(scope="module")
def strategy(tpu8):
    del tpu8
    return TPUStrategy(TPUClusterResolver(tpu=""))


@pytest.fixture
def tpu_numerics(monkeypatch):
    """The numerics row of install() alone, undone after the test."""
    monkeypatch.setenv(settings.NUMERICS_VAR, "tpu")
    changes = Changes()
    registry.apply_alone("numerics", changes)
    yield
    changes.undo()


def _operand(rng, shape, scale=1.0):
    """Random float32 values with RNE ties, subnormals and large values mixed in."""
    values = (rng.standard_normal(shape) * scale).astype(np.float32)
    flat = values.reshape(-1)
    bits = flat.view(np.uint32)
    count = flat.size
    picks = rng.permutation(count)
    ties, tiny = picks[:count // 8], picks[count // 8:count // 6]
    large = picks[count // 6:count // 5]
    # Exactly half way between two bfloat16 values: the low 16 bits are 0x8000.
    bits[ties] = (bits[ties] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    flat[tiny] = np.float32(3.1e-39) * np.sign(flat[tiny] + 0.5)  # float32 subnormals
    flat[large] = flat[large] * np.float32(1e12)
    return values


def _bf16(values):
    return np.asarray(values, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def _run(strategy, fn):
    """``fn()`` in a traced replica step; replica 0's results (numpy)."""
    results = tf.function(lambda: strategy.run(fn))()
    return tf.nest.map_structure(
        lambda r: strategy.experimental_local_results(r)[0].numpy(), results)


def _assert_tpu_numbers(got, reference, magnitude, exact, what=""):
    """``got`` is ``reference`` up to float32 accumulation, and far from ``exact``."""
    got = np.asarray(got, np.float64)
    # Results below float32's smallest normal may be flushed to zero (TF's CPU
    # depthwise kernels do): differences that small are not counted.
    tiny = np.finfo(np.float32).tiny
    scale = np.maximum(magnitude, tiny / ACCUMULATION_RTOL)
    error = np.max(np.abs(got - reference) / scale)
    assert error <= ACCUMULATION_RTOL, (what, error)
    moved = np.max(np.abs(np.asarray(exact, np.float64) - reference) / scale)
    assert moved >= ROUNDING_VISIBLE, (what, moved)


# -- the references: numpy, float64, on bfloat16-rounded operands --------------------

def _correlate(x, w, spatial):
    """VALID, stride 1 cross-correlation: x [N, *S, C], w [*K, C, O] -> [N, *S', O]."""
    windows = sliding_window_view(x, w.shape[:spatial], axis=tuple(range(1, 1 + spatial)))
    # windows: [N, *S', C, *K]
    kernel = "xyz"[:spatial]
    out = kernel.upper()
    return np.einsum(f"n{out}i{kernel},{kernel}io->n{out}o", windows, w)


def _correlate_depthwise(x, w):
    windows = sliding_window_view(x, w.shape[:2], axis=(1, 2))  # [N, H', W', C, KH, KW]
    return np.einsum("nHWcab,abcm->nHWcm", windows, w).reshape(
        windows.shape[:3] + (-1,))


def _input_gradient(x_shape, w, g, spatial, depthwise=False):
    """d sum(correlate(x, w) * g) / dx."""
    dx = np.zeros(x_shape)
    kernel = w.shape[:spatial]
    for offset in np.ndindex(*kernel):
        window = tuple(slice(o, o + s) for o, s in zip(offset, g.shape[1:1 + spatial]))
        if depthwise:
            contribution = np.einsum("nhwcm,cm->nhwc",
                                     g.reshape(g.shape[:3] + (x_shape[-1], -1)), w[offset])
        else:
            contribution = np.einsum("...o,co->...c", g, w[offset])
        dx[(slice(None),) + window] += contribution
    return dx


def _filter_gradient(x, w_shape, g, spatial, depthwise=False):
    """d sum(correlate(x, w) * g) / dw."""
    kernel = w_shape[:spatial]
    dw = np.zeros(w_shape)
    for offset in np.ndindex(*kernel):
        window = tuple(slice(o, o + s) for o, s in zip(offset, g.shape[1:1 + spatial]))
        xs = x[(slice(None),) + window]
        if depthwise:
            dw[offset] = np.einsum("nhwc,nhwcm->cm", xs,
                                   g.reshape(g.shape[:3] + (x.shape[-1], -1)))
        else:
            batch_and_space = list(range(xs.ndim - 1))
            dw[offset] = np.tensordot(xs, g, axes=(batch_and_space, batch_and_space))
    return dw


# -- op level -------------------------------------------------------------------------

def test_tf_rounds_float32_to_bfloat16_as_ml_dtypes_does(tpu8):
    del tpu8
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    bits[:64] = (bits[:64] & 0xFFFF0000) | 0x8000  # ties
    values = bits.view(np.float32)
    values = values[~np.isnan(values)]
    got = numerics.round_to_bfloat16(tf.constant(values)).numpy()
    expected = values.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    # Nearest even: 1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6 (truncation gives 1 + 2^-7).
    ties = numerics.round_to_bfloat16(tf.constant([1 + 2**-8, 1 + 3 * 2**-8])).numpy()
    assert ties.tolist() == [1.0, 1 + 2**-6]


def test_matmul_and_its_gradients(strategy, tpu_numerics):
    rng = np.random.default_rng(0)
    a, b = _operand(rng, (6, 32)), _operand(rng, (32, 5))
    g = _operand(rng, (6, 5))

    def step():
        x, y = tf.constant(a), tf.constant(b)
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            out = tf.linalg.matmul(x, y)
            loss = tf.reduce_sum(out * g)
        return (out,) + tuple(tape.gradient(loss, [x, y]))

    out, da, db = _run(strategy, step)
    ra, rb, rg = _bf16(a), _bf16(b), _bf16(g)
    a64, b64, g64 = a.astype(np.float64), b.astype(np.float64), g.astype(np.float64)
    _assert_tpu_numbers(out, ra @ rb, np.abs(ra) @ np.abs(rb), a64 @ b64)
    _assert_tpu_numbers(da, rg @ rb.T, np.abs(rg) @ np.abs(rb.T), g64 @ b64.T)
    _assert_tpu_numbers(db, ra.T @ rg, np.abs(ra.T) @ np.abs(rg), a64.T @ g64)


def test_batch_matmul_einsum_and_keras_layers(strategy, tpu_numerics):
    rng = np.random.default_rng(1)
    a, b = _operand(rng, (3, 4, 16)), _operand(rng, (3, 16, 5))
    x, kernel = _operand(rng, (4, 16)), _operand(rng, (16, 3))
    import tf_keras  # pylint: disable=import-outside-toplevel
    dense = tf_keras.layers.Dense(3, use_bias=False)
    dense.build((None, 16))
    dense.set_weights([kernel])
    image, filters = _operand(rng, (2, 7, 7, 4)), _operand(rng, (3, 3, 4, 3))
    conv = tf_keras.layers.Conv2D(3, 3, use_bias=False)
    conv.build((None, 7, 7, 4))
    conv.set_weights([filters])

    def step():
        return (tf.matmul(tf.constant(a), tf.constant(b)),
                tf.einsum("bij,bjk->bik", tf.constant(a), tf.constant(b)),
                dense(tf.constant(x)), conv(tf.constant(image)))

    batched, summed, layer, convolved = _run(strategy, step)
    ri, rf = _bf16(image), _bf16(filters)
    _assert_tpu_numbers(convolved, _correlate(ri, rf, 2),
                        _correlate(np.abs(ri), np.abs(rf), 2),
                        _correlate(image.astype(np.float64), filters.astype(np.float64), 2))
    ra, rb = _bf16(a), _bf16(b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    for got in (batched, summed):
        _assert_tpu_numbers(got, ra @ rb, np.abs(ra) @ np.abs(rb), exact)
    rx, rk = _bf16(x), _bf16(kernel)
    _assert_tpu_numbers(layer, rx @ rk, np.abs(rx) @ np.abs(rk),
                        x.astype(np.float64) @ kernel.astype(np.float64))


@pytest.mark.parametrize("kind", ["conv2d", "depthwise", "conv3d"])
def test_convolutions_and_their_backprops(strategy, tpu_numerics, kind):
    rng = np.random.default_rng({"conv2d": 2, "depthwise": 3, "conv3d": 4}[kind])
    spatial, depthwise = (3, False) if kind == "conv3d" else (2, kind == "depthwise")
    x_shape = (2,) + (7,) * spatial + (4,)
    w_shape = (3,) * spatial + ((4, 2) if depthwise else (4, 3))
    x, w = _operand(rng, x_shape), _operand(rng, w_shape)
    forward = {"conv2d": lambda i, f: tf.nn.conv2d(i, f, 1, "VALID"),
               "depthwise": lambda i, f: tf.nn.depthwise_conv2d(i, f, [1, 1, 1, 1], "VALID"),
               "conv3d": lambda i, f: tf.nn.conv3d(i, f, [1] * 5, "VALID")}[kind]
    out_shape = (2,) + (5,) * spatial + ((8,) if depthwise else (3,))
    g = _operand(rng, out_shape)

    def step():
        inputs, filters = tf.constant(x), tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch([inputs, filters])
            out = forward(inputs, filters)
            loss = tf.reduce_sum(out * g)
        return (out,) + tuple(tape.gradient(loss, [inputs, filters]))

    out, dx, dw = _run(strategy, step)
    rx, rw, rg = _bf16(x), _bf16(w), _bf16(g)
    x64, w64, g64 = (v.astype(np.float64) for v in (x, w, g))
    if depthwise:
        fwd = lambda i, f: _correlate_depthwise(i, f)  # noqa: E731
    else:
        fwd = lambda i, f: _correlate(i, f, spatial)  # noqa: E731
    _assert_tpu_numbers(out, fwd(rx, rw), fwd(np.abs(rx), np.abs(rw)), fwd(x64, w64), "forward")
    _assert_tpu_numbers(
        dx, _input_gradient(x_shape, rw, rg, spatial, depthwise),
        _input_gradient(x_shape, np.abs(rw), np.abs(rg), spatial, depthwise),
        _input_gradient(x_shape, w64, g64, spatial, depthwise), "input gradient")
    _assert_tpu_numbers(
        dw, _filter_gradient(rx, w_shape, rg, spatial, depthwise),
        _filter_gradient(np.abs(rx), w_shape, np.abs(rg), spatial, depthwise),
        _filter_gradient(x64, w_shape, g64, spatial, depthwise), "filter gradient")


# -- what stays exact -------------------------------------------------------------------

def _exact_cases():
    rng = np.random.default_rng(5)
    a, b = _operand(rng, (4, 32)), _operand(rng, (32, 3))
    return a, b, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def _matmul_now(a, b):
    return tf.matmul(tf.constant(a), tf.constant(b))


def test_exact_numerics_changes_nothing(strategy, monkeypatch):
    monkeypatch.setenv(settings.NUMERICS_VAR, "exact")
    changes = Changes()
    registry.apply_alone("numerics", changes)
    a, b, _ = _exact_cases()
    try:
        assert gen_math_ops.mat_mul.__module__ == "tensorflow.python.ops.gen_math_ops"
        assert not hasattr(gen_math_ops.mat_mul, "__wrapped__")
        in_step = _run(strategy, lambda: _matmul_now(a, b))
    finally:
        changes.undo()
    assert np.array_equal(in_step, _matmul_now(a, b).numpy())


def test_exact_outside_replica_steps_on_the_host_and_with_tf32_off(strategy, tpu_numerics):
    a, b, _ = _exact_cases()
    plain = _matmul_now(a, b).numpy()  # cross-replica: not a replica step
    from tpu_compat import lowlevel  # pylint: disable=import-outside-toplevel

    def on_host():
        return lowlevel.outside_compilation(_matmul_now, a, b)

    assert np.array_equal(_run(strategy, on_host), plain)
    # The input pipeline: built in cross-replica context, run on the host.
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.range(8).map(lambda _: _matmul_now(a, b)).batch(8))
    batch = strategy.experimental_local_results(next(iter(dataset)))[0].numpy()
    assert np.array_equal(batch[0], plain)
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        assert np.array_equal(_run(strategy, lambda: _matmul_now(a, b)), plain)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(True)
    # ...and with TF32 on (the default) the same step is rounded.
    assert not np.array_equal(_run(strategy, lambda: _matmul_now(a, b)), plain)


def test_eager_run_and_other_strategies(strategy, tpu_numerics):
    a, b, _ = _exact_cases()
    plain = _matmul_now(a, b).numpy()
    ra, rb = _bf16(a), _bf16(b)
    # An eager run (the adapter traces it, as a TPU compiles it).
    eager = strategy.experimental_local_results(strategy.run(lambda: _matmul_now(a, b)))[0]
    _assert_tpu_numbers(eager.numpy(), ra @ rb, np.abs(ra) @ np.abs(rb), plain)
    # Only the emulated TPU's replica steps: a MirroredStrategy's stay exact.
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert np.array_equal(_run(mirrored, lambda: _matmul_now(a, b)), plain)


def test_bfloat16_ops_are_left_as_they_are(strategy, tpu_numerics):
    a, b, _ = _exact_cases()
    a16, b16 = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)

    def step():
        return tf.matmul(tf.constant(a16), tf.constant(b16))

    def unrounded_step():
        with numerics.on_host():  # the same op in the same step, exact
            return step()

    graph = tf.function(lambda: strategy.run(step)).get_concrete_function().graph
    assert not [op for op in graph.get_operations() if op.type == "Cast"]
    # Against the same op in the same kind of step, not an eager bfloat16 matmul:
    # CPUs with bfloat16 kernels (AVX512_BF16, AMX) may compute that one with
    # another kernel, and its last bits with it.
    assert np.array_equal(_run(strategy, step).astype(np.float32),
                          _run(strategy, unrounded_step).astype(np.float32))


def test_install_applies_it_and_uninstall_undoes_it(tpu8, monkeypatch):
    del tpu8
    modules = {row.module: importlib.import_module(row.module) for row in numerics.ROWS}
    tpu_compat.uninstall()
    before = {name: dict(vars(module)) for name, module in modules.items()}
    monkeypatch.setenv(settings.NUMERICS_VAR, "tpu")
    tpu_compat.install(warnings="ignore")
    try:
        for row in numerics.ROWS:
            wrapped = getattr(modules[row.module], row.function)
            assert wrapped is not before[row.module][row.function], row
            # The rounding is the outermost wrapper; with oneDNN on, the
            # "empty batches" row's guard sits below it on the convolutions
            # (the registry declares that order).
            assert wrapped.__code__.co_qualname == "_rounding.<locals>.rounded", row
            assert inspect.unwrap(wrapped) is before[row.module][row.function], row
    finally:
        tpu_compat.uninstall()
    for name, module in modules.items():
        after = vars(module)
        assert [k for k in before[name] if after.get(k) is not before[name][k]] == []


# -- the table against TF 2.21's own tf2xla lowering --------------------------------------

def _examples():
    x, w, dw = tf.ones((2, 8, 8, 4)), tf.ones((3, 3, 4, 4)), tf.ones((3, 3, 4, 1))
    x3, w3 = tf.ones((1, 4, 4, 4, 2)), tf.ones((2, 2, 2, 2, 2))
    m, b3 = tf.ones((4, 4)), tf.ones((2, 4, 4))
    s1, s3 = [1, 1, 1, 1], [1, 1, 1, 1, 1]
    return {
        "MatMul": (gen_math_ops.mat_mul, (m, m), {}),
        "SparseMatMul": (gen_math_ops.sparse_mat_mul, (m, m), {}),
        "BatchMatMul": (gen_math_ops.batch_mat_mul, (b3, b3), {}),
        "BatchMatMulV2": (gen_math_ops.batch_mat_mul_v2, (b3, b3), {}),
        "BatchMatMulV3": (gen_math_ops.batch_mat_mul_v3, (b3, b3, tf.float32), {}),
        "Einsum": (lambda p, q: gen_linalg_ops.einsum([p, q], "ij,jk->ik"), (m, m), {}),
        "Conv2D": (gen_nn_ops.conv2d, (x, w, s1, "SAME"), {}),
        "Conv2DBackpropInput": (lambda f, g: gen_nn_ops.conv2d_backprop_input(
            (2, 8, 8, 4), f, g, s1, "SAME"), (w, x), {}),
        "Conv2DBackpropFilter": (lambda i, g: gen_nn_ops.conv2d_backprop_filter(
            i, (3, 3, 4, 4), g, s1, "SAME"), (x, x), {}),
        "Conv3D": (gen_nn_ops.conv3d, (x3, w3, s3, "SAME"), {}),
        "Conv3DBackpropInputV2": (lambda f, g: gen_nn_ops.conv3d_backprop_input_v2(
            (1, 4, 4, 4, 2), f, g, s3, "SAME"), (w3, x3), {}),
        "Conv3DBackpropFilterV2": (lambda i, g: gen_nn_ops.conv3d_backprop_filter_v2(
            i, (2, 2, 2, 2, 2), g, s3, "SAME"), (x3, x3), {}),
        "DepthwiseConv2dNative": (gen_nn_ops.depthwise_conv2d_native, (x, dw, s1, "SAME"), {}),
        "DepthwiseConv2dNativeBackpropInput": (
            lambda f, g: gen_nn_ops.depthwise_conv2d_native_backprop_input(
                (2, 8, 8, 4), f, g, s1, "SAME"), (dw, x), {}),
        "DepthwiseConv2dNativeBackpropFilter": (
            lambda i, g: gen_nn_ops.depthwise_conv2d_native_backprop_filter(
                i, (3, 3, 4, 1), g, s1, "SAME"), (x, x), {}),
        "Conv": (gen_nn_ops.conv, (x, w, s1, "SAME"), {}),
    }


def test_each_row_is_a_default_precision_dot_or_convolution_in_tf2xla(tpu8):
    """TF 2.21's lowering: DEFAULT with TF32 on, HIGHEST with it off (the table's claim)."""
    del tpu8
    examples = _examples()
    assert set(examples) == {row.op_type for row in numerics.ROWS}
    for row in numerics.ROWS:
        function, args, kwargs = examples[row.op_type]
        tensors = [a for a in args if isinstance(a, tf.Tensor)]
        others = [a for a in args if not isinstance(a, tf.Tensor)]

        def make(function, others, kwargs):
            return lambda *inputs: function(*inputs, *others, **kwargs)

        build = make(function, others, kwargs)

        for tf32, precision in ((True, None), (False, "{highest,highest}")):
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
            try:
                hlo = tf.function(build, jit_compile=True).experimental_get_compiler_ir(
                    *tensors)(stage="hlo")
            finally:
                tf.config.experimental.enable_tensor_float_32_execution(True)
            kinds = set(re.findall(r"\b(dot|convolution)\(", hlo))
            assert kinds, (row.op_type, hlo)
            found = set(re.findall(r"operand_precision=(\{[^}]*\})", hlo))
            assert found == (set() if precision is None else {precision}), (row.op_type, tf32)
        graph = tf.function(build).get_concrete_function(*tensors).graph
        assert row.op_type in {op.type for op in graph.get_operations()}, row
