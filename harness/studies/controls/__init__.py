"""+study=controls: the batch-size study's controls on MNIST-1D (conf/control/), at batch 8, 32 and 128."""
from harness.studies.fixed import FixedBatches

STUDY = FixedBatches("controls", "batch 8, 32 and 128")
