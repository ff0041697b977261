"""The runtime both coordinators (groups, transactions) share, as Kafka's ``coordinator-common``:
partitioning of ids over an internal topic, the asyncio timer and its worker, the loader that
replays a partition at start (skipping records it cannot decode), and the append of a step's
records with Kafka's mapping of append errors."""
