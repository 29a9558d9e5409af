"""Tests of the operator runtime and its stores."""
