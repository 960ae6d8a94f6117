"""+study=hoffer: Hoffer, Hubara & Soudry 2017's arms on MNIST-1D (conf/hoffer/), read as a batch-size
study (its findings: harness.assess.batch_controls, which reads the arms of any sweep). Its own behaviour is one
check: its arms hold MNIST-1D's batch sizes (batch 8 against batch 128), so a command that gives others is refused
(exit 2), pointing to +study=diagnose."""
from __future__ import annotations

from harness.studies.study import Study


class Hoffer(Study):
    name = "hoffer"

    def check_command(self, given):
        from harness.config.pairs import refuse_batch_size

        refuse_batch_size(given, self.name, "batch 8 against batch 128")


STUDY = Hoffer()
