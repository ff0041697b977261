"""The stream runtime: App, StreamsBuilder and DSL, processor API, stream threads, tasks,
the commit, restoration and the assignor. Talks to Kafka through aiokafka only."""

from streamrt.runtime.dsl import (
    BufferConfig,
    BufferFullError,
    CogroupedKStream,
    Consumed,
    GlobalKTable,
    Grouped,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    Named,
    Produced,
    SessionWindowedKStream,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TimeWindowedKStream,
    ValueJoinerWithKey,
)
from streamrt.runtime.exception_handlers import ErrorContext, HandlerResponse
from streamrt.runtime.instance.app import App, AppError, Health
from streamrt.runtime.instance.metadata import AppState, StreamsMetadata
from streamrt.runtime.instance.queries import StoreNotReadyError, StreamsQueries
from streamrt.runtime.metadata import ThreadMetadata, ThreadState
from streamrt.runtime.processor import Processor, ProcessorContext, ValueAndTimestamp, Windowed
from streamrt.runtime.store_builders import StoreBuilder, Stores
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = (
    "App",
    "AppError",
    "AppState",
    "BufferConfig",
    "BufferFullError",
    "CogroupedKStream",
    "Consumed",
    "ErrorContext",
    "GlobalKTable",
    "Grouped",
    "HandlerResponse",
    "Health",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Processor",
    "ProcessorContext",
    "Produced",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindows",
    "StoreBuilder",
    "StoreNotReadyError",
    "Stores",
    "StreamJoined",
    "StreamsBuilder",
    "StreamsMetadata",
    "StreamsQueries",
    "Suppressed",
    "ThreadMetadata",
    "ThreadState",
    "TimeWindowedKStream",
    "TimeWindows",
    "ValueAndTimestamp",
    "ValueJoinerWithKey",
    "Windowed",
)
