"""Durable partition logs: segments, indices, retention, compaction, idempotent producers."""

from streamrt.broker.log.log_manager import LogManager, TopicInfo
from streamrt.broker.log.partition_log import AppendInfo, FetchSlice, PartitionLog

__all__ = ("AppendInfo", "FetchSlice", "LogManager", "PartitionLog", "TopicInfo")
