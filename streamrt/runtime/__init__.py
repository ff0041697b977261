"""The stream runtime: App, StreamsBuilder and DSL, processor API, stream threads, tasks,
the commit, restoration and the assignor. Talks to Kafka through aiokafka only."""

from streamrt.runtime.app import App, AppError, Health
from streamrt.runtime.builder import StreamsBuilder
from streamrt.runtime.dsl import KGroupedStream, KStream, KTable, TimeWindowedKStream
from streamrt.runtime.exception_handlers import ErrorContext, HandlerResponse
from streamrt.runtime.metadata import AppState, StreamsMetadata, ThreadMetadata, ThreadState
from streamrt.runtime.processor import Processor, ProcessorContext, Windowed
from streamrt.runtime.queries import StoreNotReadyError, StreamsQueries

__all__ = (
    "App",
    "AppError",
    "AppState",
    "ErrorContext",
    "HandlerResponse",
    "Health",
    "KGroupedStream",
    "KStream",
    "KTable",
    "Processor",
    "ProcessorContext",
    "StoreNotReadyError",
    "StreamsBuilder",
    "StreamsMetadata",
    "StreamsQueries",
    "ThreadMetadata",
    "ThreadState",
    "TimeWindowedKStream",
    "Windowed",
)
