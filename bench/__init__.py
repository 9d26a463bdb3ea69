"""Benchmarks, run by `make bench`; never by the tests."""
