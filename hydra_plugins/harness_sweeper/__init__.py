"""The harness's Hydra sweeper: runs the one plan its command made (see sweeper.py)."""
