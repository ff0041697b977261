"""The Kafka client adapters and admin calls: the one room that drives a Kafka client library."""
