"""checkpoint.npz (harness.run.checkpoint): weights, optimizer state and epoch, saved and restored on a tiny model."""
import numpy as np
import pytest

from harness.backend import keras
from harness.run import checkpoint
from harness.store import layout


def _model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(32, 4)).astype(np.float32), rng.integers(0, 3, 32)


def _optimizer_state(model):
    return [v.numpy() for v in model.optimizer.variables]


def _step(model):
    x, y = _data()
    model.train_on_batch(x, y)


def test_save_and_restore_bring_back_weights_and_optimizer_state(tmp_path):
    trained = _model(0)
    for _ in range(3):
        _step(trained)
    checkpoint.save(tmp_path, 5, trained)
    assert checkpoint.saved_epoch(tmp_path) == 5
    assert [p.name for p in tmp_path.iterdir()] == [layout.CHECKPOINT]  # no temporary file left

    fresh = _model(1)  # other initial weights, an optimizer that has not stepped yet
    assert not all(np.array_equal(a, b) for a, b in zip(fresh.get_weights(), trained.get_weights()))
    checkpoint.restore(fresh, tmp_path)
    for restored, saved in zip(fresh.get_weights(), trained.get_weights()):
        assert np.array_equal(restored, saved)
    assert int(fresh.optimizer.iterations.numpy()) == 3
    for restored, saved in zip(_optimizer_state(fresh), _optimizer_state(trained)):
        assert np.array_equal(restored, saved)  # Adam's moments too, not only the step count
    _step(fresh)  # the next update is the one the saved model would have made
    _step(trained)
    for a, b in zip(fresh.get_weights(), trained.get_weights()):
        assert np.array_equal(a, b)


def test_the_checkpoint_is_plain_arrays_without_pickles(tmp_path):
    model = _model(0)
    _step(model)
    checkpoint.save(tmp_path, 1, model)
    with np.load(tmp_path / layout.CHECKPOINT, allow_pickle=False) as saved:
        names = set(saved.files)
    assert names == {"epoch", *(f"weight_{i}" for i in range(4)),
                     *(f"optimizer_{i}" for i in range(len(model.optimizer.variables)))}


def test_a_later_save_replaces_the_earlier_and_remove_clears_it(tmp_path):
    assert checkpoint.saved_epoch(tmp_path) == 0  # none yet
    model = _model(0)
    _step(model)
    checkpoint.save(tmp_path, 1, model)
    checkpoint.save(tmp_path, 2, model)
    assert checkpoint.saved_epoch(tmp_path) == 2
    assert [p.name for p in tmp_path.iterdir()] == [layout.CHECKPOINT]
    checkpoint.remove(tmp_path)
    assert checkpoint.saved_epoch(tmp_path) == 0 and list(tmp_path.iterdir()) == []
    checkpoint.remove(tmp_path)  # removing none is fine


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    model = _model(0)
    _step(model)
    checkpoint.save(tmp_path, 1, model)
    monkeypatch.setattr(checkpoint.np, "savez", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(tmp_path, 2, model)
    assert checkpoint.saved_epoch(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == [layout.CHECKPOINT]


def test_the_callback_saves_after_each_epoch_unless_training_stops(tmp_path):
    model = _model(0)
    x, y = _data()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0, callbacks=[checkpoint.callback(tmp_path, model)])
    assert checkpoint.saved_epoch(tmp_path) == 2
    assert int(model.optimizer.iterations.numpy()) == 4  # 2 epochs x 2 steps
    with np.load(tmp_path / layout.CHECKPOINT) as saved:  # the state after the last epoch
        for i, variable in enumerate(model.optimizer.variables):
            assert np.array_equal(saved[f"optimizer_{i}"], variable.numpy())

    stopped = tmp_path / "stopped"
    stopped.mkdir()
    callback = checkpoint.callback(stopped, model)
    model.stop_training = True  # diverged, or at its target loss: nothing to resume
    callback.on_epoch_end(0)
    assert not (stopped / layout.CHECKPOINT).exists()
