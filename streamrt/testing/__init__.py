"""Unit-test a topology without a broker: :class:`TopologyTestDriver`, as Kafka Streams'."""

from streamrt.testing.driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver

__all__ = ("TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver")
