"""End-to-end tests: real sweeps through the command line, faults, the installed wheel, the benchmarks' smoke runs."""
