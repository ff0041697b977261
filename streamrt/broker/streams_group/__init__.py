"""KIP-1071 streams groups (StreamsGroupHeartbeat, API 88): topology, topic checks, assignor."""
