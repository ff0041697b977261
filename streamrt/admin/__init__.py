"""Admin client and CLI for any Kafka-protocol broker, including KIP-345 static-member removal."""

from streamrt.admin.client import EARLIEST, LATEST, AdminClient
from streamrt.admin.cluster import NoBrokerAvailableError
from streamrt.admin.connection import (
    AdminConnectionError,
    AdminTimeoutError,
    UnsupportedVersionError,
)
from streamrt.admin.models import (
    ConfigEntry,
    GroupDescription,
    GroupListing,
    MemberDescription,
    NewTopic,
    OffsetAndMetadata,
    PartitionInfo,
    TopicDescription,
)

__all__ = (
    "EARLIEST",
    "LATEST",
    "AdminClient",
    "AdminConnectionError",
    "AdminTimeoutError",
    "ConfigEntry",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "NoBrokerAvailableError",
    "OffsetAndMetadata",
    "PartitionInfo",
    "TopicDescription",
    "UnsupportedVersionError",
)
