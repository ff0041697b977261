"""Developer tooling: things a contributor runs next to streamrt, never the runtime itself.

``apache_kafka`` starts a real Apache Kafka (KRaft) assembled from Maven Central, so that the
runtime and the embedded broker can be checked against the system they follow.
"""
