"""KIP-848 consumer groups: the broker computes assignments (ConsumerGroupHeartbeat, API 68).

A pure state machine (``coordinator``) with an injected clock and timer, beside the classic
coordinator in ``streamrt.broker.group`` and driven by the same service and lock.
"""
