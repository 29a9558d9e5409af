"""The conformance suite: run scenarios against an implementation and check its trace
against the reference model and the contract's properties."""
