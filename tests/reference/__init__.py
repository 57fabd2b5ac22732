"""Brute-force, loop-based reference implementations used as test oracles."""
