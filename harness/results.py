"""`python -m harness.results [SWEEP ...]`: the command users type for one table of every run's final metrics,
kept at the top of the package; the table itself is harness.report.results."""
import sys

from harness.report.results import main

if __name__ == "__main__":
    sys.exit(main())
