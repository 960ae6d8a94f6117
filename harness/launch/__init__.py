"""The command line and the processes it starts: preflight checks, the scheduler and its warm workers, signals,
progress, and what follows a multirun.

May import: every wing; never a backend at module level (a run's process imports it).
"""
