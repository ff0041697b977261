"""streamrt: a Kafka Streams-style stream-processing runtime for Python.

Packages, each importing only those below it: ``spark`` (Spark data source and reports) and
``deploy`` (rolling-deploy driver) → ``rest`` (an instance's HTTP endpoint) and ``admin``
(admin client and CLI) → ``runtime`` (App, DSL, stream threads, tasks, assignor) → ``state``
(state stores and their manager); ``broker`` (embedded broker: log storage, group coordinator)
→ ``wire`` (Kafka protocol codec). The runtime talks to any Kafka broker through aiokafka and
imports neither ``broker`` nor ``rest``; ``streamrt run`` (``streamrt.run``) wires the REST
endpoint to an app.
"""

__version__ = "0.1.0"
