"""The engine: stream threads, the task manager and its tasks, the committers (one per
processing guarantee), restoration, standbys, the assignor and the Kafka clients' internals.

Laid out as Kafka Streams' ``processor/internals``, in rooms by job (``thread``, ``rebalance``,
``commit``, ``tasks``, ``restore``, ``assignment``, ``clients``), each importing only the rooms
below it; the modules at this level are what every room shares (pyproject.toml's ``engine-*``
import contracts). The API users call lives elsewhere."""
