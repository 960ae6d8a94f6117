"""The Keras side of the probes: loss, gradient and Hessian-vector products of a real Keras model, checked
against softmax regression's closed forms, and the probes on it against numpy's eigenvalues and trace; on each
backend (its own autodiff: double backprop on TensorFlow, jax.jvp of jax.grad on JAX)."""
import numpy as np
import pytest

from harness.probes import curvature, noise_scale
from tests.helpers import backends

N, D, K = 96, 6, 4


def _batches(x, y, size):
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(y), size)]


@pytest.fixture(scope="module")
def softmax_regression(backend):
    if not backends.here(backend):  # the case runs in a child pytest on its backend
        return None
    from harness.backend import keras
    from harness.probes.objective import Objective

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = rng.integers(0, K, N)
    inputs = keras.Input((D,))
    model = keras.Model(inputs, keras.layers.Dense(K, activation="softmax", use_bias=False)(inputs))
    model.layers[-1].kernel.assign(rng.standard_normal((D, K)).astype(np.float32) * 0.3)
    batches = _batches(x, y, 40)  # uneven batches: 40, 40, 16
    return Objective(model, batches), x.astype(np.float64), y


def _closed_form(objective, x, y):
    """Mean cross-entropy of softmax(xW): gradient xᵀ(p − onehot)/n, Hessian Σ kron(xxᵀ, diag p − ppᵀ)/n,
    in the row-major order of W (D, K) that the objective flattens to."""
    w = objective.weights().reshape(D, K)
    logits = x @ w
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    onehot = np.eye(K)[y]
    loss = float(np.mean(-np.log(p[np.arange(N), y])))
    gradient = (x.T @ (p - onehot) / N).ravel()
    hessian = sum(np.kron(np.outer(xi, xi), np.diag(pi) - np.outer(pi, pi)) for xi, pi in zip(x, p)) / N
    return loss, gradient, hessian


def test_loss_gradient_and_hessian_vector_products_match_the_closed_form(softmax_regression):
    objective, x, y = softmax_regression
    loss, gradient, hessian = _closed_form(objective, x, y)
    found_loss, found_gradient = objective.loss_and_gradient()
    assert objective.samples == N and objective.size == D * K
    assert found_loss == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(found_gradient, gradient, atol=1e-6)
    v = np.random.default_rng(1).standard_normal(D * K)
    np.testing.assert_allclose(objective.hessian_vector(v), hessian @ v, rtol=1e-4, atol=1e-6)


def test_top_eigenvalue_and_trace_of_the_model_match_numpy(softmax_regression):
    objective, x, y = softmax_regression
    _, _, hessian = _closed_form(objective, x, y)
    found = curvature.spectrum(objective.hessian_vector, objective.size)
    assert found.eigenvalue.converged and found.trace.converged
    assert found.eigenvalue.value == pytest.approx(np.linalg.eigvalsh(hessian)[-1], rel=1e-3)
    assert abs(found.trace.value - np.trace(hessian)) < 3 * found.trace.stderr
    # softmax regression's Hessian has rank D(K - 1) = 18 (the softmax's shift): a sketch allowed that many
    # steps spans its range, and the trace is exact
    whole = curvature.spectrum(objective.hessian_vector, objective.size, sketch_min=objective.size)
    assert D * (K - 1) <= whole.sketch <= D * K and whole.trace.iterations == 0 and whole.trace.stderr == 0.0
    assert whole.trace.value == pytest.approx(np.trace(hessian), rel=1e-4)


def test_sharpness_moves_the_weights_only_inside_the_box_and_they_are_restored(softmax_regression):
    from harness.probes.objective import restoring

    objective, x, y = softmax_regression
    before = objective.weights()
    restore = restoring(objective)
    seen = []

    def loss_and_gradient(w):
        seen.append(np.abs(w - before).max() <= 1e-3 * (np.abs(before).max() + 1) + 1e-9)
        objective.assign(w)
        return objective.loss_and_gradient()

    found = curvature.sharpness(loss_and_gradient, before, 1e-3)
    restore()
    assert found.value > 0 and all(seen) and 1 <= found.iterations <= curvature.SHARPNESS_ITERATIONS
    np.testing.assert_allclose(objective.weights(), before, rtol=0, atol=1e-7)


def test_batch_gradients_feed_the_noise_scale(softmax_regression):
    """Per-batch gradients of equal batches average to the full gradient: the big batch's |G|²."""
    from harness.probes.objective import Objective

    objective, x, y = softmax_regression
    equal = Objective(objective.model, _batches(x.astype(np.float32), y, 16))
    gradients = equal.batch_gradients()
    assert len(gradients) == N // 16
    _, full = equal.loss_and_gradient()
    np.testing.assert_allclose(np.mean(gradients, axis=0), full, atol=1e-6)
    estimate = noise_scale.from_batch_gradients(gradients, 16)
    assert estimate.grad_trace_cov > 0


def test_a_second_model_of_the_same_structure_reuses_the_traced_functions_with_its_own_weights(backend):
    """A warm worker's runs build and compile a new model each: the Hessian-vector function is traced once for all
    of them (at every batch size), and each model's products are its own (the functions take the weights' values,
    never a model's variables)."""
    from harness.backend import keras
    from harness.probes.objective import Objective

    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((N, D)).astype(np.float32), rng.integers(0, K, N)
    keras.backend.clear_session()
    objectives = []
    for scale, steps in ((0.3, 500), (1.0, 62)):  # no clear_session between: the second's layers are dense_1, ...
        inputs = keras.Input((D,))
        model = keras.Model(inputs, keras.layers.Dense(K, activation="softmax", use_bias=False)(inputs))
        model.layers[-1].kernel.assign(rng.standard_normal((D, K)).astype(np.float32) * scale)
        # compiled as a run compiles it: its schedule's steps differ with the batch size
        schedule = keras.optimizers.schedules.CosineDecay(1e-3, steps)
        model.compile(optimizer=keras.optimizers.Adam(schedule), loss="sparse_categorical_crossentropy")
        objectives.append(Objective(model, _batches(x, y, N)))
    first, second = objectives
    assert first.traced is second.traced
    v = rng.standard_normal(D * K)
    products = [first.hessian_vector(v)]
    traced = first.traced.hessian_vector_traces()
    products.append(second.hessian_vector(v))
    assert first.traced.hessian_vector_traces() == traced  # the second model traced nothing
    for objective, product in zip(objectives, products):
        _, _, hessian = _closed_form(objective, x.astype(np.float64), y)
        np.testing.assert_allclose(product, hessian @ v, rtol=1e-4, atol=1e-6)
    inputs = keras.Input((D,))  # another structure: a bias, so its own functions
    other = keras.Model(inputs, keras.layers.Dense(K, activation="softmax")(inputs))
    assert Objective(other, _batches(x, y, N)).traced is not first.traced


def test_on_tensorflow_one_trace_serves_batches_of_every_size():
    """The noise scale's batches of 32 and the probes' of 512 share one trace of each function (a second trace
    cost 0.12 s of a run's probes); its values are those of the batches it is given."""
    if not backends.here("tensorflow"):
        pytest.skip("tf.function traces; JAX compiles a program per input shape")
    from harness.backend import keras
    from harness.probes.objective import Objective

    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((N, 5)).astype(np.float32), rng.integers(0, 3, N)
    inputs = keras.Input((5,))  # a structure of this test's own: its functions are traced here
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax", name="only_here")(inputs))
    objective = Objective(model, _batches(x, y, 40))  # 40, 40, 16
    loss, _ = objective.loss_and_gradient()
    product = objective.hessian_vector(rng.standard_normal(objective.size))
    objective.use(_batches(x, y, 32))
    assert objective.loss_and_gradient()[0] == pytest.approx(loss, rel=1e-5)
    assert objective.hessian_vector(np.ones(objective.size)).shape == product.shape
    assert objective.traced._loss_and_gradient.experimental_get_tracing_count() == 1
    assert objective.traced.hessian_vector_traces() == 1


def test_on_tensorflow_the_probes_functions_run_without_grappler_with_the_same_numbers():
    """Each run instantiates the probes' functions again, and TensorFlow's graph optimiser is half of that: they
    run with it off, giving the same products and gradients bit for bit as with it on, and the context's setting
    is put back after each call."""
    if not backends.here("tensorflow"):
        pytest.skip("Grappler is TensorFlow's")
    import tensorflow as tf

    from harness.backend import keras
    from harness.probes.objective import Objective

    rng = np.random.default_rng(11)
    x, y = rng.standard_normal((N, 5)).astype(np.float32), rng.integers(0, 3, N)
    inputs = keras.Input((5,))
    hidden = keras.layers.Conv1D(4, 3, padding="same", activation="relu")(keras.layers.Reshape((5, 1))(inputs))
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.Flatten()(hidden))
    objective = Objective(keras.Model(inputs, outputs, name="grappler_test"), _batches(x, y, N))
    traced, values, fixed = objective.traced, *objective._values()
    batch_x, batch_y = objective.batches[0]
    vector = rng.standard_normal(objective.size)
    product, (loss, gradient) = (traced.hessian_vector(values, fixed, batch_x, batch_y, vector),
                                 traced.loss_and_gradient(values, fixed, batch_x, batch_y))
    assert tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False) is False  # put back
    optimised_product = traced._hessian_vector(values, fixed, batch_x, batch_y, tf.constant(vector, tf.float32))
    optimised_loss, optimised_gradient = traced._loss_and_gradient(values, fixed, batch_x, batch_y)
    np.testing.assert_array_equal(product, optimised_product.numpy())
    np.testing.assert_array_equal(gradient, optimised_gradient.numpy())
    assert loss == float(optimised_loss)
