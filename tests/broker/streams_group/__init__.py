"""Streams groups (KIP-1071): the pure topology, topic-check and assignor parts."""
