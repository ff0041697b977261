"""One instance of a streams application: the App's lifecycle, the supervision of its stream
threads (in this process or one child process each), hand-off, health, the metadata and
interactive-query facade, and the internal topics it creates before joining.

Kafka Streams' ``KafkaStreams`` and its helpers. Sits above the engine and the DSL.
"""
