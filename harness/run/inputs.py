"""What a run trains and measures on: its data (the tuning slice held out, the training split transformed) and
the input pipelines built from it (training batches; training, validation and tuning data to evaluate after each
epoch): tf.data pipelines on TensorFlow (harness.data.pipelines), numpy batches on JAX (harness.data.batches).
A backend is loaded only inside the pipeline functions."""
from __future__ import annotations

import dataclasses

from harness import backend
from harness.config.batching import BatchPlan
from harness.config.schema import RunConfig
from harness.data import registry as data
from harness.data import transforms
from harness.data.transforms import Arrays


def prepare_data(cfg: RunConfig) -> Arrays:
    """The run's data: the tuning slice held out of the training split (tune_fraction > 0), the rest transformed
    as configured (on the samples, or on the list of files), validation as loaded; a preprocessing mismatch is
    applied to validation by the run's input pipeline."""
    arrays = data.load(cfg.data)
    x_train, y_train, x_tune, y_tune = arrays.x_train, arrays.y_train, None, None
    if cfg.train.tune_fraction > 0:
        x_train, y_train, x_tune, y_tune = transforms.hold_out(x_train, y_train, cfg.train.tune_fraction)
    x_train, y_train = transforms.apply(
        x_train, y_train, imbalance=cfg.train.imbalance, shuffle=cfg.train.shuffle,
        seed=cfg.train.seed, train_fraction=cfg.train.train_fraction,
    )
    return dataclasses.replace(arrays, x_train=x_train, y_train=y_train, x_tune=x_tune, y_tune=y_tune)


def training_inputs(cfg: RunConfig, data_in: Arrays, replicas: int):
    """(training data to evaluate, validation inputs, `phase_batches(plan, epochs, initial_epoch, total_steps)`: the
    training batches of epochs [initial_epoch, epochs) at a phase's plan, tuning slice to evaluate or None): image
    files are decoded per batch, and a preprocessing mismatch is applied to the validation inputs only. Every epoch's
    sample order depends on the seed and the epoch alone, so a phase sees the samples a fixed batch would, batched
    at its own size."""
    from harness.data.decode import decoder

    train_eval, val_inputs = evaluation_inputs(cfg, data_in, replicas)
    decode = decoder(data_in.decode)
    if backend.name() == "tensorflow":
        from harness.data.pipelines import evaluation_dataset, training_dataset

        make_batches, evaluated = training_dataset, evaluation_dataset
    else:
        from harness.data.batches import training_batches

        make_batches, evaluated = training_batches, _evaluated_arrays

    def phase_batches(plan: BatchPlan, epochs: int, initial_epoch: int, total_steps: int | None = None):
        return make_batches(data_in.x_train, data_in.y_train, plan.global_batch_size, plan.steps_per_epoch,
                            cfg.train.shuffle, cfg.train.seed, epochs, initial_epoch=initial_epoch,
                            total_steps=total_steps, decode=decode)

    tune_eval = None if data_in.x_tune is None else evaluated(data_in.x_tune, data_in.y_tune, decode, replicas)
    return train_eval, val_inputs, phase_batches, tune_eval


def evaluation_inputs(cfg: RunConfig, data_in: Arrays, replicas: int = 1):
    """(training (x, y) batches to evaluate, validation inputs) as the run measures them after each epoch, in
    batches that split over `replicas`."""
    from harness.data.decode import decoder

    decode = decoder(data_in.decode)
    val_decode = decoder(data_in.decode, validation_transform(cfg, data_in))
    if backend.name() == "tensorflow":
        from harness.data.pipelines import evaluation_dataset

        train_eval = evaluation_dataset(data_in.x_train, data_in.y_train, decode, replicas)
        val_inputs = evaluation_dataset(data_in.x_val, data_in.y_val, val_decode, replicas).map(lambda x, y: x)
        return train_eval, val_inputs
    return (_evaluated_arrays(data_in.x_train, data_in.y_train, decode, replicas),
            _evaluated_arrays(data_in.x_val, None, val_decode, replicas))


def validation_transform(cfg: RunConfig, data_in: Arrays):
    """What the run does to validation inputs only (a deliberate preprocessing mismatch), or None."""
    train_std = _sample_std(cfg, data_in) if cfg.train.preprocess_mismatch == "shifted" else None
    return transforms.mismatch_function(cfg.train.preprocess_mismatch, train_std)


def _evaluated_arrays(x, y, decode, replicas: int = 1):
    """Numpy evaluation batches as Keras reads them (backend=jax)."""
    from harness.data.batches import EVAL_BATCH, Batches
    from harness.run.train import ArrayDataset

    return ArrayDataset(Batches(x, y, EVAL_BATCH, decode))


def _sample_std(cfg: RunConfig, data_in: Arrays) -> float:
    if data_in.decode is None:
        return float(data_in.x_train.std())
    from harness.data.decode import sample_std

    return sample_std(data_in.x_train, data_in.decode)
