"""`python -m harness.worker SWEEP_DIR`: the warm run process the launcher starts per slot, under the name it has
always had; the worker itself is harness.launch.worker."""
from harness.launch.worker import run_as_command

if __name__ == "__main__":
    run_as_command()
