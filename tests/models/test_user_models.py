"""The user's own model (harness.models.user_models): keras.applications classes checked against the data before
anything runs, and `model=custom` targets imported at validation."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from harness.config.schema import ConfigError
from harness.models import user_models
from harness.models.registry import ModelConfig
from tests.conftest import run_harness

GOOD_MODULE = """
import keras

def small(input_shape, num_classes, units=8):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(units, activation="relu")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))

def wrong(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    outputs = keras.layers.Dense(num_classes + 1, activation="softmax")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, outputs)

NOT_A_FUNCTION = 42
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's, importable as the working directory is when they run the harness."""
    name = f"mymodels_{tmp_path.name.replace('-', '_')}"  # a fresh name: no module cached from another test
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(GOOD_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_applications_are_read_with_their_minimum_image_side_without_tensorflow():
    names = user_models.applications()
    assert names["VGG19"] == 32 and names["InceptionV3"] == 75
    assert {"ResNet50", "MobileNetV2", "EfficientNetB0"} <= set(names)
    assert not [n for n in names if not n[0].isupper()]  # classes, not the modules' helper functions
    probe = subprocess.run([sys.executable, "-c", "import sys; from harness.models import user_models; "
                            "user_models.applications(); print('tensorflow' in sys.modules)"],
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "False", probe.stderr[-2000:]


def test_vgg19_is_refused_on_sequences_and_on_small_images_naming_the_shape():
    with pytest.raises(ConfigError) as err:
        user_models.check_application("VGG19", (40, 1))
    assert str(err.value).startswith("model.name='VGG19' is not allowed") and "(40, 1)" in str(err.value)
    with pytest.raises(ConfigError) as err:
        user_models.check_application("VGG19", (16, 16, 3))
    assert "(16, 16, 3)" in str(err.value) and "32x32" in str(err.value)
    with pytest.raises(ConfigError, match=r"\(64, 64, 3\).*InceptionV3 needs images of at least 75x75"):
        user_models.check_application("InceptionV3", (64, 64, 3))
    user_models.check_application("VGG19", (32, 32, 3))  # cifar10's shape
    user_models.check_application("InceptionV3", (75, 80, 1))
    user_models.check_application("VGG19", None)  # TFDS: the shape is known only once loaded


def test_an_unknown_application_lists_the_known_ones():
    with pytest.raises(ConfigError) as err:
        user_models.check_application("VGG20", (32, 32, 3))
    assert str(err.value).startswith("model.name='VGG20' is not allowed") and "VGG19" in str(err.value)


def test_application_through_the_composed_config(compose, tmp_path):
    with pytest.raises(ConfigError, match=r"^model.name='VGG19' is not allowed: .*\(40, 1\)"):
        compose("model=application", "model.name=VGG19")  # on the default MNIST-1D
    cfg = compose("model=application", "model.name=MobileNetV2", "+model.alpha=0.35", "dataset=cifar10")
    assert cfg.model.source == "application" and cfg.model.name == "MobileNetV2"
    assert dict(cfg.model.options) == {"alpha": 0.35}
    assert cfg.model.flat() == {"model": "MobileNetV2", "model.source": "application", "model.bn_momentum": None,
                                "model.alpha": 0.35}


def test_a_custom_target_that_imports(user_module, compose):
    user_models.check_target(f"{user_module}.small")
    cfg = compose("model=custom", f"model._target_={user_module}.small", "+model.units=5")
    assert cfg.model.target == f"{user_module}.small" and dict(cfg.model.options) == {"units": 5}


@pytest.mark.parametrize("target, reason", [
    ("{m}.missing", "module {m} has no attribute missing"),
    ("no_such_module_xyz.build", "ModuleNotFoundError: No module named 'no_such_module_xyz'"),
    ("{m}.NOT_A_FUNCTION", "NOT_A_FUNCTION is not callable"),
    ("small", "a dotted path module.function is needed"),
])
def test_a_custom_target_that_cannot_be_used_is_a_config_error(user_module, target, reason):
    target, reason = target.format(m=user_module), reason.format(m=user_module)
    with pytest.raises(ConfigError) as err:
        user_models.check_target(target)
    assert str(err.value).startswith(f"model._target_={target!r} is not allowed")
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_a_custom_target_whose_module_raises_on_import(tmp_path, monkeypatch):
    (tmp_path / "broken_models_mod.py").write_text("raise RuntimeError('needs a GPU library')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"RuntimeError: needs a GPU library"):
        user_models.check_target("broken_models_mod.build")
    sys.modules.pop("broken_models_mod", None)


def test_missing_target_is_refused(compose):
    with pytest.raises(ConfigError, match=r"^model._target_=None is not allowed"):
        compose("model=custom")


def test_a_custom_model_with_the_wrong_output_is_refused_naming_the_target(user_module):
    good = user_models.build_custom(f"{user_module}.small", (6, 1), 4, {"units": 3})
    cfg = ModelConfig(name="custom", source="custom", target=f"{user_module}.wrong")
    user_models.check_outputs(good, cfg, 4)
    assert good.layers[-2].units == 3  # the extra model.* key reached the function
    wrong = user_models.build_custom(f"{user_module}.wrong", (6, 1), 4, {})
    with pytest.raises(ValueError) as err:
        user_models.check_outputs(wrong, cfg, 4)
    assert f"model._target_='{user_module}.wrong'" in str(err.value)
    assert "(None, 5)" in str(err.value) and "Dense(4, activation='softmax')" in str(err.value)
    with pytest.raises(ValueError, match="returned ndarray, not a keras.Model"):
        user_models.check_outputs(np.zeros(3), cfg, 4)


def test_cli_vgg19_on_cifar10_shape_is_accepted_without_the_cifar_files(tmp_path, compose):
    env = {"KERAS_HOME": str(tmp_path / "keras-home")}  # an empty Keras cache: no CIFAR-10 here
    proc = run_harness("model=application", "model.name=VGG19", "dataset=cifar10", "--cfg", "job", cwd=tmp_path,
                       env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "name: VGG19" in proc.stdout and "name: cifar10" in proc.stdout and "source: application" in proc.stdout
    # the same command is valid as a run, checked against cifar10's (32, 32, 3) without loading it
    cfg = compose("model=application", "model.name=VGG19", "dataset=cifar10", "batch_size=64")
    assert cfg.model.name == "VGG19" and cfg.data.name == "cifar10"
    assert not (tmp_path / "keras-home").exists() and not (tmp_path / "sweeps").exists()


def test_cli_vgg19_on_mnist1d_exits_2_with_one_line(tmp_path):
    proc = run_harness("model=application", "model.name=VGG19", "batch_size=8,32", "-m", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("harness: error: model.name='VGG19' is not allowed") and "(40, 1)" in lines[0]
    assert proc.stdout == "" and not (tmp_path / "sweeps").exists() and not (tmp_path / "reports").exists()
