"""A study whose arms hold MNIST-1D's batch sizes (+study=hoffer, +study=controls): read as a batch-size study (its
findings: harness.assess.batch_controls, which reads the arms of any sweep); its own behaviour is one check, that
a command giving other batch sizes is refused (exit 2), pointing to +study=diagnose."""
from __future__ import annotations

from harness.fields import ConfigError
from harness.studies.study import Study


class FixedBatches(Study):
    def __init__(self, name: str, fixed: str):
        self.name, self.fixed = name, fixed  # `fixed`: its batch sizes in words ("batch 8 against batch 128")

    def check_command(self, given):
        refuse_batch_size(given, self.name, self.fixed)


def refuse_batch_size(given: dict[str, str], study: str, fixed: str) -> None:
    """A study whose arms hold MNIST-1D's batch sizes (`fixed`, in words) refuses other batch sizes, pointing to the
    study that computes its arms from the command's own."""
    if "batch_size" in given:
        value = given["batch_size"].split("=", 1)[1]
        raise ConfigError("batch_size", value, f"left to +study={study}, whose arms are fixed at {fixed}; "
                          f"+study=diagnose batch_size={value} -m computes steps-matched, learning-rate and ghost "
                          "batch-norm arms from your own batch sizes")

