import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ info and warnings drown the progress lines

from harness.launch.cli import main  # noqa: E402

code = main()
# Everything is written by now (files closed, logs flushed just below). With TensorFlow loaded, the interpreter's
# orderly teardown takes about a second more and has nothing left to do, so the process ends here.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
