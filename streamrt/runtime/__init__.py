"""The stream runtime: App, DSL, processor API, stream threads, tasks and the assignor."""

from streamrt.runtime.app import App, AppError
from streamrt.runtime.dsl import KGroupedStream, KStream, KTable, TimeWindowedKStream
from streamrt.runtime.metadata import StreamsMetadata, ThreadMetadata, ThreadState
from streamrt.runtime.processor import Processor, ProcessorContext, Windowed

__all__ = (
    "App",
    "AppError",
    "KGroupedStream",
    "KStream",
    "KTable",
    "Processor",
    "ProcessorContext",
    "StreamsMetadata",
    "ThreadMetadata",
    "ThreadState",
    "TimeWindowedKStream",
    "Windowed",
)
