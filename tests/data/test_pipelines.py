"""A run's input pipelines, each contract on both implementations: the tf.data pipelines of a TensorFlow run
(harness.data.pipelines) and the numpy batches of a JAX run (harness.data.batches): stateless epoch orders, batches
that never span two epochs, step budgets and resumed runs."""
import numpy as np
import pytest

from harness.config.batching import plan_batches
from harness.data import batches as numpy_batches
from harness.data import pipelines

IMPLEMENTATIONS = {"tf.data": (pipelines.epoch_order, pipelines.training_dataset),
                   "numpy": (numpy_batches.epoch_order, numpy_batches.training_batches)}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def implementation(request):
    return request.param


def _data(n=100):
    x = np.arange(n, dtype=np.float32)[:, None]
    return x, np.arange(n, dtype=np.int64) % 10


def _order(train_size, shuffle, seed, epoch, implementation="tf.data"):
    return np.asarray(IMPLEMENTATIONS[implementation][0](train_size, shuffle, seed, epoch)).tolist()


def test_epoch_order_is_a_permutation_that_depends_only_on_seed_and_epoch(implementation):
    first = _order(100, True, 3, 2, implementation)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    IMPLEMENTATIONS[implementation][0](100, True, 99, 0)  # other draws in between change nothing: stateless
    np.random.default_rng(5).permutation(10)
    assert _order(100, True, 3, 2, implementation) == first
    assert _order(100, True, 3, 3, implementation) != first  # another epoch
    assert _order(100, True, 4, 2, implementation) != first  # another seed


def test_epoch_order_without_shuffle_is_the_given_order_every_epoch(implementation):
    assert _order(50, False, 3, 0, implementation) == list(range(50)) == _order(50, False, 7, 9, implementation)


def _dataset(x, y, plan, *args, implementation="tf.data", **kwargs):
    make = IMPLEMENTATIONS[implementation][1]
    return make(x, y, plan.global_batch_size, plan.steps_per_epoch, *args, **kwargs)


def _batches(dataset):
    return [(np.asarray(x)[:, 0].tolist(), np.asarray(y).tolist()) for x, y in dataset]


def test_training_batches_cover_each_epoch_once_and_never_span_two(implementation):
    x, y = _data()
    plan = plan_batches(16, False, 1, len(x))  # 7 steps: six of 16, one of 4
    batches = _batches(_dataset(x, y, plan, True, 0, epochs=3, implementation=implementation))
    assert [len(b[0]) for b in batches] == [16] * 6 + [4] + [16] * 6 + [4] + [16] * 6 + [4]
    for epoch in range(3):
        seen = [v for xs, _ in batches[7 * epoch: 7 * (epoch + 1)] for v in xs]
        assert sorted(seen) == list(range(100))
        assert seen == _order(100, True, 0, epoch, implementation)
    assert all(np.array_equal(np.array(xs, dtype=np.int64) % 10, ys) for xs, ys in batches)  # labels follow


def test_a_step_budget_gives_exactly_that_many_batches_and_a_resumed_run_the_same_ones(implementation):
    x, y = _data()
    plan = plan_batches(16, False, 1, len(x))  # 7 steps per epoch
    whole = _batches(_dataset(x, y, plan, True, 5, epochs=2, total_steps=10, implementation=implementation))
    assert len(whole) == 10 and [len(b[0]) for b in whole[7:]] == [16, 16, 16]  # the last epoch cut short
    resumed = _batches(_dataset(x, y, plan, True, 5, epochs=2, initial_epoch=1, total_steps=10,
                                implementation=implementation))
    assert resumed == whole[7:]
    unshuffled = _batches(_dataset(x, y, plan, False, 5, epochs=1, implementation=implementation))
    assert [v for xs, _ in unshuffled for v in xs] == list(range(100))


@pytest.mark.parametrize("samples", [301, 302, 299, 1025, 1501, 4000])
@pytest.mark.parametrize("replicas", [2, 4])
def test_evaluation_batches_split_over_the_replicas_with_a_sample_for_each_in_the_last(samples, replicas):
    batch = pipelines.evaluation_batch(samples, replicas)
    assert batch % replicas == 0 and batch <= pipelines.EVAL_BATCH
    assert samples % batch == 0 or samples % batch >= replicas
    assert pipelines.evaluation_batch(samples) == pipelines.EVAL_BATCH  # one device: batches as ever


def test_numpy_evaluation_batches_are_kept_for_arrays_and_decoded_again_for_files():
    x, y = _data(2500)
    kept = numpy_batches.Batches(x, y)
    assert len(kept) == 3 and [len(b[1]) for b in kept] == [1024, 1024, 452] and kept[2] is kept[2]
    assert np.array_equal(np.concatenate([b[0] for b in kept]), x)
    calls = []
    decoded = numpy_batches.Batches(x, None, 1000, decode=lambda xs: calls.append(len(xs)) or xs * 2)
    assert [len(b) for b in decoded] == [1000, 1000, 500] and calls == [1000, 1000, 500]
    list(decoded)
    assert len(calls) == 6  # files: decoded at each pass, nothing kept


def test_tf_data_pipelines_run_without_the_autotuning_thread_that_held_the_end_of_fit():
    """Deleting an iterator waits for tf.data's autotuning thread, which held `fit`'s return for seconds on a
    busy CPU: a run's training and evaluation pipelines (with decoding, too) turn autotuning off."""
    x, y = _data()
    plan = plan_batches(16, False, 1, len(x))
    datasets = [_dataset(x, y, plan, True, 0, epochs=1), pipelines.evaluation_dataset(x, y),
                _dataset(x, y, plan, True, 0, epochs=1, decode=lambda xs: xs * 2),
                pipelines.evaluation_dataset(x, y, decode=lambda xs: xs * 2)]
    assert [d.options().autotune.enabled for d in datasets] == [False] * 4
    assert _batches(datasets[2])[0][0] == [2 * v for v in _batches(datasets[0])[0][0]]  # still the same batches
