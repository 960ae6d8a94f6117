"""`python -m harness.probe sweeps/<sweep-id>`: the command users type for the sweep's interpolation, kept at the
top of the package; the job itself is harness.run.interpolation."""
import sys

from harness.run.interpolation import main

if __name__ == "__main__":
    sys.exit(main())
