"""The command line and the processes it starts: the plan (written to sweep.json), what a launcher declares,
preflight checks, the scheduler and its warm workers, the tracking process, signals, progress, and what follows a
multirun.

May import: every wing; never a backend at module level (a run's process imports it).
"""
