"""Subcommands of the replay-contract command line."""
