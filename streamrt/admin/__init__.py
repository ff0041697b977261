"""Admin client and CLI for any Kafka-protocol broker, including KIP-345 static-member removal."""

from streamrt.admin.access import AclBinding, AclOperation, PatternType, Permission, ResourceType
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
from streamrt.admin.security import AdminSecurity, AuthenticationError

__all__ = (
    "EARLIEST",
    "LATEST",
    "AclBinding",
    "AclOperation",
    "AdminClient",
    "AdminConnectionError",
    "AdminSecurity",
    "AdminTimeoutError",
    "AuthenticationError",
    "ConfigEntry",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "NoBrokerAvailableError",
    "OffsetAndMetadata",
    "PartitionInfo",
    "PatternType",
    "Permission",
    "ResourceType",
    "TopicDescription",
    "UnsupportedVersionError",
)
