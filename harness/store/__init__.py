"""The files of a sweep and its runs: every file name is spelled here, and read and written through here.

May import: the standard library, numpy, pandas, pyarrow; no other wing of harness.
"""
