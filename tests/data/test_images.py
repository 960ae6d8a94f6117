"""`dataset=images` (harness.data.images): a folder of class sub-folders, surveyed without decoding, checked for
corrupt files before training, and the one-line errors a user gets for a folder that cannot be used."""
from pathlib import Path

import numpy as np
import pytest

from harness.config.schema import ConfigError
from harness.data import images
from harness.data import registry as datasets
from tests.conftest import assert_largest_batch, run_harness
from tests.helpers.user_data import COLOURS, expected_train_size, write_images


def test_a_folder_is_read_as_classes_of_files_split_stratified(tmp_path, compose):
    counts = write_images(tmp_path / "d", per_class={"blue": 10, "green": 6, "red": 4}, size=(5, 7))
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "batch_size=8")
    assert cfg.data.image_size == (32, 32) and cfg.data.color_mode == "rgb" and cfg.data.val_fraction == 0.2
    arrays = datasets.load(cfg.data)
    assert arrays.classes == ["blue", "green", "red"] and arrays.num_classes == 3
    assert arrays.decode == ("image", (32, 32), "rgb") and tuple(arrays.input_shape) == (32, 32, 3)
    assert np.bincount(arrays.y_train).tolist() == [8, 5, 3] and np.bincount(arrays.y_val).tolist() == [2, 1, 1]
    assert len(arrays.x_train) == expected_train_size(counts)
    # x holds the files, each under its label's folder; no file both trains and validates
    for x, y in ((arrays.x_train, arrays.y_train), (arrays.x_val, arrays.y_val)):
        assert [Path(f).parent.name for f in x] == [arrays.classes[k] for k in y]
    assert not set(arrays.x_train) & set(arrays.x_val)
    assert len(set(arrays.x_train) | set(arrays.x_val)) == sum(counts.values())
    # the split is seeded by dataset.data_seed
    again = datasets.load(compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "batch_size=8").data)
    other = datasets.load(compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.data_seed=1",
                                  "batch_size=8").data)
    assert list(again.x_val) == list(arrays.x_val) and list(other.x_val) != list(arrays.x_val)


def test_image_size_and_grayscale_set_the_input_shape(tmp_path, compose):
    write_images(tmp_path / "d", per_class=3, size=(4, 4))
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.image_size=[24,40]",
                  "dataset.color_mode=grayscale", "batch_size=2")
    assert datasets.input_shape(cfg.data) == (24, 40, 1)
    assert datasets.load(cfg.data).decode == ("image", (24, 40), "grayscale")
    with pytest.raises(ConfigError, match=r"^dataset.color_mode='cmyk' is not allowed"):
        compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.color_mode=cmyk")
    with pytest.raises(ConfigError, match=r"^dataset.image_size=.*\[height, width\]"):
        compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.image_size=[32]")


def test_the_decoder_resizes_and_scales_each_batch(tmp_path, compose):
    from harness.backend import tf
    from harness.data.decode import decoder

    write_images(tmp_path / "d", per_class=2, size=(9, 13))
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.image_size=[8,6]", "batch_size=2")
    arrays = datasets.load(cfg.data)
    batch = decoder(arrays.decode)(tf.constant(arrays.x_train)).numpy()
    assert batch.shape == (len(arrays.x_train), 8, 6, 3)
    assert 0.0 <= batch.min() and batch.max() <= 1.0
    # each image keeps its class's colour: the brightest channel is the one the class is named for
    brightest = batch.mean(axis=(1, 2)).argmax(axis=1)
    assert [arrays.classes[k] for k in arrays.y_train] == [["red", "green", "blue"][c] for c in brightest]


def test_a_path_that_does_not_exist(tmp_path, compose):
    with pytest.raises(ConfigError) as err:
        compose("dataset=images", f"dataset.path={tmp_path / 'nowhere'}")
    assert str(err.value).startswith(f"dataset.path='{tmp_path / 'nowhere'}' is not allowed")
    assert "nothing is there" in str(err.value)


def test_cli_a_folder_that_cannot_be_used_is_one_line_exit_2_nothing_written(tmp_path):
    (tmp_path / "pics" / "cats").mkdir(parents=True)
    (tmp_path / "pics" / "cats" / "a.png").write_bytes(b"")
    proc = run_harness("dataset=images", "dataset.path=pics", "batch_size=8,32", "-m", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"harness: error: dataset.path='{(tmp_path / 'pics').resolve()}' is not allowed: a folder with one "
        "sub-folder of images per class, at least two classes (found 1 with .png, .jpg, .jpeg, .bmp, .gif files)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pics"]


def test_a_file_where_a_folder_is_needed(tmp_path, compose):
    (tmp_path / "x.png").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"^dataset.path=.*is not allowed: the path of a folder"):
        compose("dataset=images", f"dataset.path={tmp_path / 'x.png'}")


def test_a_folder_with_fewer_than_two_classes(tmp_path, compose):
    write_images(tmp_path / "d", per_class=3, colours={"only": (1, 2, 3)})
    (tmp_path / "d" / "empty").mkdir()  # a sub-folder without images is no class
    with pytest.raises(ConfigError) as err:
        compose("dataset=images", f"dataset.path={tmp_path / 'd'}")
    assert str(err.value).startswith("dataset.path=")
    assert "at least two classes (found 1" in str(err.value)


def test_a_folder_with_no_readable_images(tmp_path, compose):
    for name in ("a", "b"):
        (tmp_path / "d" / name).mkdir(parents=True)
        (tmp_path / "d" / name / "notes.txt").write_text("not an image")
        (tmp_path / "d" / name / "scan.tiff").write_bytes(b"II*\x00")
    with pytest.raises(ConfigError) as err:
        compose("dataset=images", f"dataset.path={tmp_path / 'd'}")
    assert "found 0 with .png, .jpg, .jpeg, .bmp, .gif files" in str(err.value)
    assert "\n" not in str(err.value)


def test_batch_size_larger_than_the_training_folder(tmp_path, compose):
    counts = write_images(tmp_path / "d", per_class={"blue": 9, "green": 7, "red": 3}, size=(2, 2))
    assert_largest_batch(compose, expected_train_size(counts), "dataset=images", f"dataset.path={tmp_path / 'd'}")


def test_survey_counts_files_without_decoding_and_the_run_check_names_a_corrupt_one(tmp_path, compose):
    counts = write_images(tmp_path / "d", per_class={"blue": 5, "green": 5, "red": 5}, size=(3, 3))
    bad = tmp_path / "d" / "green" / "broken.png"
    bad.write_bytes(b"this is not a png at all")
    (tmp_path / "d" / "red" / "README.md").write_text("ignored: not an image suffix")
    counts["green"] += 1
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "batch_size=4")  # validation decodes nothing
    n = expected_train_size(counts)
    assert datasets.train_class_counts(cfg.data).sum() == n == 4 + 5 + 4
    with pytest.raises(images.CorruptImage) as err:
        datasets.load(cfg.data)
    assert str(bad) in str(err.value) and "not a readable image" in str(err.value)
    # a truncated image is caught too, and the good files pass
    good = sorted(str(p) for p in (tmp_path / "d" / "blue").glob("*.png"))
    images.check_images(np.array(good))
    truncated = tmp_path / "d" / "blue" / "cut.png"
    truncated.write_bytes(Path(good[0]).read_bytes()[:60])
    with pytest.raises(images.CorruptImage, match="cut.png"):
        images.check_images(np.array([*good, str(truncated)]))


def test_a_separate_validation_folder_is_used_whole(tmp_path, compose):
    train_counts = write_images(tmp_path / "train", per_class={"blue": 6, "green": 4, "red": 5}, size=(3, 3))
    write_images(tmp_path / "val", per_class={"blue": 2, "green": 3}, size=(3, 3),
                 colours={k: COLOURS[k] for k in ("blue", "green")}, suffix=".jpg")
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'train'}", f"dataset.val_path={tmp_path / 'val'}",
                  f"batch_size={sum(train_counts.values())}")  # every training file trains
    assert datasets.train_class_counts(cfg.data).tolist() == [6, 4, 5]
    arrays = datasets.load(cfg.data)
    assert arrays.classes == ["blue", "green", "red"]
    assert np.bincount(arrays.y_val, minlength=3).tolist() == [2, 3, 0]
    assert all(Path(f).is_relative_to(tmp_path / "val") for f in arrays.x_val)
    assert all(Path(f).is_relative_to(tmp_path / "train") for f in arrays.x_train)
    assert all(Path(f).parent.name == arrays.classes[k] for f, k in zip(arrays.x_val, arrays.y_val))


def test_a_validation_folder_with_a_class_training_lacks(tmp_path, compose):
    write_images(tmp_path / "train", per_class=3, size=(3, 3), colours={"cat": (1, 1, 1), "dog": (9, 9, 9)})
    write_images(tmp_path / "val", per_class=1, size=(3, 3), colours={"cat": (1, 1, 1), "emu": (5, 5, 5)})
    with pytest.raises(ConfigError) as err:
        compose("dataset=images", f"dataset.path={tmp_path / 'train'}", f"dataset.val_path={tmp_path / 'val'}",
                "batch_size=2")
    assert str(err.value).startswith("dataset.val_path=") and "emu" in str(err.value)


def test_a_validation_folder_that_does_not_exist(tmp_path, compose):
    write_images(tmp_path / "train", per_class=3, size=(3, 3))
    with pytest.raises(ConfigError, match=r"^dataset.val_path=.*nothing is there"):
        compose("dataset=images", f"dataset.path={tmp_path / 'train'}", f"dataset.val_path={tmp_path / 'val'}")


def test_a_truncated_jpeg_is_named_before_training(tmp_path):
    from PIL import Image

    whole = tmp_path / "whole.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3)).astype(np.uint8)).save(whole, quality=90)
    images.check_images(np.array([str(whole)]))
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(images.CorruptImage, match="cut.jpg"):
        images.check_images(np.array([str(whole), str(cut)]))


@pytest.mark.parametrize("suffix", [".gif", ".bmp"])
def test_grayscale_reads_every_accepted_suffix(tmp_path, compose, suffix):
    from harness.backend import tf
    from harness.data.decode import decoder

    write_images(tmp_path / "d", per_class=2, size=(6, 6), suffix=suffix)
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'd'}", "dataset.color_mode=grayscale",
                  "dataset.image_size=[4,4]", "batch_size=2")
    arrays = datasets.load(cfg.data)
    batch = decoder(arrays.decode)(tf.constant(arrays.x_train)).numpy()
    assert batch.shape == (len(arrays.x_train), 4, 4, 1) and 0.0 <= batch.min() and batch.max() <= 1.0
