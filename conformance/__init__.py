"""The conformance suite: run scenarios against an implementation and check its trace
against the reference model and the contract's properties.

- :mod:`.interface`: what an implementation provides (the ``Implementation`` protocol,
  ``Capabilities``) and what the suite gives it (``Environment``, ``Crashed``);
- :mod:`.channels`, :mod:`.environment`, :mod:`.runner`: driving an implementation
  through a schedule and recording its observable trace;
- :mod:`.reference`, :mod:`.compare`, :mod:`.judge`: the model's trace of the same
  scenario, the first difference between the two, the properties, the verdict;
- :mod:`.generate`, :mod:`.shrink`, :mod:`.suite`: which scenarios run, generated ones
  from a seed, failing ones written and shrunk;
- :mod:`.targets`, :mod:`.model_target`, :mod:`.process`: what a target name stands for;
- :mod:`.report`, :mod:`.plugin`: the summary, JSON, JUnit and the pytest plugin.
"""
