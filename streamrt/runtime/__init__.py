"""The stream runtime: App, StreamsBuilder and DSL, processor API, stream threads, tasks,
the commit, restoration and the assignor. Talks to Kafka through aiokafka only."""

from streamrt.runtime.dsl import (
    BufferConfig,
    BufferFullError,
    CogroupedKStream,
    GlobalKTable,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    SessionWindowedKStream,
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
from streamrt.runtime.processor import Processor, ProcessorContext, Windowed
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = (
    "App",
    "AppError",
    "AppState",
    "BufferConfig",
    "BufferFullError",
    "CogroupedKStream",
    "ErrorContext",
    "GlobalKTable",
    "HandlerResponse",
    "Health",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Processor",
    "ProcessorContext",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindows",
    "StoreNotReadyError",
    "StreamsBuilder",
    "StreamsMetadata",
    "StreamsQueries",
    "Suppressed",
    "ThreadMetadata",
    "ThreadState",
    "TimeWindowedKStream",
    "TimeWindows",
    "ValueJoinerWithKey",
    "Windowed",
)
