"""The stream thread: its loop, state, metrics and wake-ups (Kafka Streams' StreamThread)."""
