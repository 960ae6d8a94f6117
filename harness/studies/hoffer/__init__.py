"""+study=hoffer: Hoffer, Hubara & Soudry 2017's arms on MNIST-1D (conf/hoffer/), at batch 8 against batch 128."""
from harness.studies.fixed import FixedBatches

STUDY = FixedBatches("hoffer", "batch 8 against batch 128")
