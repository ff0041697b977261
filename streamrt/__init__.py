"""streamrt: a Kafka Streams-style stream-processing runtime for Python.

Layers, top to bottom: ``spark`` → ``rest``/``admin``/``metadata`` → ``runtime`` →
``broker`` (log storage, group coordinator) → ``wire`` (Kafka protocol codec).
"""

__version__ = "0.1.0"
