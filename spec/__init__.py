"""The specification: the contract's properties and their Z3 encoding.

:mod:`.properties` defines each property once, as a predicate over a trace that
returns a verdict with a witness. The model's checks, the conformance suite and the
symbolic encoding all use these definitions.
"""
