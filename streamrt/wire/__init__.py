"""Kafka wire protocol: framing, kio codec dispatch and RecordBatch v2 headers."""
