"""Example apps that ship in the package, so an installed streamrt can run them.

``streamrt demo`` runs :mod:`streamrt.examples.sessions` (``streamrt.examples.sessions:app``);
:mod:`streamrt.examples.wordcount` is the smallest whole app. They import only the runtime's
public API (and the sessions fold beside them): the deploy tooling may name them, the runtime
never does. The repository's ``apps/`` holds more examples, run from a checkout.
"""
