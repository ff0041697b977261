"""The engine: stream threads, the task manager and its tasks, the committers (one per
processing guarantee), restoration, standbys, the assignor and the Kafka clients' internals.

Laid out as Kafka Streams' ``processor/internals``; the API users call lives elsewhere."""
