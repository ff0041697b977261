"""The classic consumer-group protocol, client side: a group member owned by streamrt.

Membership (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offsets) is kept apart
from fetching, so any client in manual-assign mode can fetch for the partitions it is given;
eager and cooperative (KIP-429) rebalancing and static membership (KIP-345) as Kafka's
ConsumerCoordinator does them.
"""
