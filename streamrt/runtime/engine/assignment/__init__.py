"""The assignor and task placement (Kafka Streams' StreamsPartitionAssignor)."""
