from harness.studies.diagnose import words
from harness.studies.diagnose.settings import recorded, settings_from_dict


def test_the_settings_read_back_from_sweep_json_are_those_validated():
    validated = settings_from_dict({"lr_scaling": "linear", "warmup_epochs": 1.0, "capacity": 0.2})
    assert recorded({"settings": validated.thresholds()}) == validated


def test_a_key_an_older_sweep_json_lacks_means_what_it_did_before_the_key():
    """warmup_epochs came after the linear lr arms: a diagnosis recorded before it had no warm-up, not the default
    2 epochs, and its method says so."""
    saved = {k: v for k, v in settings_from_dict({"lr_scaling": "linear"}).thresholds().items() if k != "warmup_epochs"}
    plan = {"small_batch": 8, "large_batch": 64, "attribution": "shapley", "ladder": [], "settings": saved}
    assert recorded(plan).warmup_epochs == 0.0
    assert words.method(plan).endswith("take batch 8's learning rate x 64/8.")
    plan["settings"] = {**saved, "warmup_epochs": 2.0}
    assert "warmed up over 2 of batch 8's epochs" in words.method(plan)
