"""Group membership glue: streamrt's member, its rebalance listener, the join's side work."""
