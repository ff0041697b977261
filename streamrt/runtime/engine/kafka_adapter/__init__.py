"""Every aiokafka internal the runtime touches, in one place, pinned to aiokafka 0.14.0.

The runtime needs four things aiokafka does not offer publicly: the consumer's member id and
group generation (for metadata and events), a static member's heartbeat that reports
FENCED_INSTANCE_ID (82), and a rejoin on demand (probing rebalances). :data:`PINNED_INTERNALS`
lists every private name used here and ``tests/runtime/test_kafka_adapter.py`` checks them
against the installed aiokafka, so an upgrade that moves them fails loudly in the suite instead
of silently at run time.

What aiokafka 0.14 does by itself (read in ``aiokafka/consumer/group_coordinator.py``):

* it has no error class for code 82, so ``for_code(82)`` is ``UnknownError`` and the code is
  lost in the message;
* it sends Heartbeat v0/v1, which carry no ``group_instance_id``. When another process takes
  over our instance id, the coordinator can then only answer UNKNOWN_MEMBER_ID; aiokafka
  resets and rejoins with the same instance id, which replaces the other process, which does
  the same: the two take the id from each other for ever and nobody is told;
* it does skip LeaveGroup when ``group_instance_id`` is set (``_maybe_leave_group``), which
  is what static membership needs, so that part is left as it is.

So this module registers :class:`FencedInstanceIdError` for code 82 and gives a consumer a
heartbeat that sends Heartbeat v3 with the ``group_instance_id`` (Kafka 2.3+), so the
coordinator answers 82 and the runtime can stop with a message naming the id.

Exactly-once (KIP-447) needs one more piece: aiokafka's ``send_offsets_to_transaction`` sends
TxnOffsetCommit **v0**, which carries no group metadata, so the group coordinator cannot tell a
stale incarnation of a static member (or a member fenced by a rebalance) from the current one
and accepts its offsets. :func:`install_group_metadata_offsets` makes one producer send
TxnOffsetCommit **v3** with the consumer's generation, member id and ``group.instance.id``,
read from the consumer at the moment the request is built; the coordinator's answers 22, 25
and 82 abort the transaction (the offsets never land) instead of killing the producer.

One module per concern: :mod:`.membership` (the group consumer), :mod:`.transactions` (the
transactional producer), :mod:`.pins` (the pinned version and names). This package is the one
place in the runtime that touches aiokafka's private fields.
"""

from streamrt.runtime.engine.kafka_adapter.membership import (
    FencedInstanceIdError,
    assign_at,
    check_static_membership,
    find_coordinator,
    generation,
    in_generation,
    install_static_heartbeat,
    is_fenced,
    member_id,
    request_rejoin,
    retire_static_member,
)
from streamrt.runtime.engine.kafka_adapter.pins import (
    AIOKAFKA_VERSION,
    PINNED_INTERNALS,
    check_pinned_internals,
)
from streamrt.runtime.engine.kafka_adapter.shutdown import STUCK_STOP_S, stop_consumer
from streamrt.runtime.engine.kafka_adapter.transactions import (
    GroupMetadata,
    group_metadata,
    install_group_metadata_offsets,
    is_producer_fenced,
)

__all__ = (
    "AIOKAFKA_VERSION",
    "PINNED_INTERNALS",
    "STUCK_STOP_S",
    "FencedInstanceIdError",
    "GroupMetadata",
    "assign_at",
    "check_pinned_internals",
    "check_static_membership",
    "find_coordinator",
    "generation",
    "group_metadata",
    "in_generation",
    "install_group_metadata_offsets",
    "install_static_heartbeat",
    "is_fenced",
    "is_producer_fenced",
    "member_id",
    "request_rejoin",
    "retire_static_member",
    "stop_consumer",
)
