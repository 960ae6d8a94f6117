import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ info and warnings drown the progress lines

from harness.cli import main  # noqa: E402

sys.exit(main())
