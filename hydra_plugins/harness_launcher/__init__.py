"""The harness's Hydra launcher: every job in a fresh process (see launcher.py)."""
