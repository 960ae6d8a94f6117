"""A study whose arms hold MNIST-1D's batch sizes (+study=hoffer, +study=controls): read as a batch-size study (its
findings: harness.assess.batch_controls, which reads the arms of any sweep); its own behaviour is one check, that
a command giving other batch sizes is refused (exit 2), pointing to +study=diagnose."""
from __future__ import annotations

from harness.studies.study import Study


class FixedBatches(Study):
    def __init__(self, name: str, fixed: str):
        self.name, self.fixed = name, fixed  # `fixed`: its batch sizes in words ("batch 8 against batch 128")

    def check_command(self, given):
        from harness.config.pairs import refuse_batch_size

        refuse_batch_size(given, self.name, self.fixed)
