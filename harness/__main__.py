import logging
import os
import sys

from harness.launch.cli import main
from harness.launch.processes import die_with_parent

die_with_parent()  # a run the command started dies with it
code = main(process_ends=True)
# Everything is written by now (files closed, logs flushed just below). With TensorFlow loaded, the interpreter's
# orderly teardown takes about a second more and has nothing left to do, so the process ends here.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
