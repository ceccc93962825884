"""Servers on 127.0.0.1 that stand in for the outside world in benchmarks and tests."""
