"""The model the numerics scenarios train, and its numpy re-implementation.

No TensorFlow here: tests/test_numerics_training.py computes the reference
with it, and the scenarios (numerics_training*.py) take their data and
initial weights from it. A two-layer perceptron (8 -> 16 relu -> 4, mean
squared error) trained with SGD on a global batch of 16, one batch per step.
``reference(rounded=True)`` rounds every matmul operand to bfloat16 (ml_dtypes,
round to nearest even), forward and backward, as a TPU's default precision
does, and accumulates in float64; ``rounded=False`` is exact arithmetic.
"""

import ml_dtypes
import numpy as np

GLOBAL_BATCH = 16
STEPS = 5
LEARNING_RATE = 0.1
SIZES = (8, 16, 4)


def data():
    rng = np.random.RandomState(24)
    features = rng.randn(GLOBAL_BATCH * STEPS, SIZES[0]).astype(np.float32)
    mixing = rng.randn(SIZES[0], SIZES[2])
    labels = np.tanh(features.dot(mixing)).astype(np.float32)
    return features, labels


def initial_weights():
    """[w1, b1, w2, b2], float32."""
    rng = np.random.RandomState(25)
    w1 = rng.randn(SIZES[0], SIZES[1]) / np.sqrt(SIZES[0])
    b1 = 0.1 * rng.randn(SIZES[1])
    w2 = rng.randn(SIZES[1], SIZES[2]) / np.sqrt(SIZES[1])
    b2 = 0.1 * rng.randn(SIZES[2])
    return [v.astype(np.float32) for v in (w1, b1, w2, b2)]


def _rounding(rounded):
    if not rounded:
        return lambda v: np.asarray(v, np.float64)
    return lambda v: np.asarray(v, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def forward(weights, features, rounded):
    r = _rounding(rounded)
    w1, b1, w2, b2 = (np.asarray(v, np.float64) for v in weights)
    pre = r(features) @ r(w1) + b1
    hidden = np.maximum(pre, 0.0)
    return pre, hidden, r(hidden) @ r(w2) + b2


def reference(rounded):
    """The weights after STEPS steps of SGD (float64 lists), and each step's loss."""
    r = _rounding(rounded)
    features, labels = data()
    weights = [w.astype(np.float64) for w in initial_weights()]
    losses = []
    for step in range(STEPS):
        x = features[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH]
        y = labels[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH].astype(np.float64)
        pre, hidden, prediction = forward(weights, x, rounded)
        losses.append(float(np.mean((prediction - y) ** 2)))
        d_prediction = 2.0 * (prediction - y) / prediction.size
        d_w2 = r(hidden).T @ r(d_prediction)
        d_b2 = d_prediction.sum(axis=0)
        d_hidden = (r(d_prediction) @ r(weights[2]).T) * (pre > 0)
        d_w1 = r(x).T @ r(d_hidden)
        d_b1 = d_hidden.sum(axis=0)
        weights = [w - LEARNING_RATE * g
                   for w, g in zip(weights, (d_w1, d_b1, d_w2, d_b2))]
    return weights, losses
