"""Shape analysis: extents known and unknown, run-time sizes as terms, batch axes, which axes may merge."""
