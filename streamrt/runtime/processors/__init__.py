"""The operators behind the DSL: Processor classes and their logic, one operator family per
module (stateless, tables, aggregate, window_aggregate, suppress, the joins, the global
thread). They see the graph (value getters, specs) but never the DSL API above them."""
