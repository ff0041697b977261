"""The graph the DSL builds: the topology and its nodes, store specs, value getters and the
handles (:class:`~streamrt.runtime.graph.nodes.StreamNode`, ``TableNode``) that the DSL's API
objects wrap. Knows no concrete processor: ``processors`` and ``dsl`` sit above it."""
