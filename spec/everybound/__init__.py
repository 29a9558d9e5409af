"""Opt-in proofs for every bound: ``verify --engine parametric``.

Hand-written second models of the machine of :mod:`replay_contract.spec.encoding`, off
``verify``'s default path; what they prove and what rests on tests: README.md here.
"""
