"""Tasks and their manager: a task's inputs, partition group, processing and schedules."""
