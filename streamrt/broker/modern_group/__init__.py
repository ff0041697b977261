"""What KIP-848 consumer groups and KIP-1071 streams groups share (Kafka's ``modern`` package):
the leave epochs, the member lookups and their errors, session/rebalance timers, offset checks."""
