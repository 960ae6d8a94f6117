"""`python -m harness.report SWEEP_DIR` (or `--index`): the report of a sweep; see harness.report.html."""
import sys

from harness.report.html import main

sys.exit(main())
